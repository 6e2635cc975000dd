#include "bench/worker/read_bandwidth.h"

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/zero_pages.h"
#include "kernels/quant/quant_matmul.h"

namespace arbor::worker {
namespace {

using ReadFn = int64_t (*)(const char* data, int64_t bytes);

// Sums `bytes` (a multiple of 256) as 64-bit lanes in four independent accumulators, prefetching
// kAhead bytes ahead (none at 0) with hint kHint. 512-bit loads.
template <int kAhead, int kHint>
__attribute__((target("avx512f"))) int64_t Read512(const char* data, int64_t bytes) {
  __m512i acc[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
  for (int64_t i = 0; i < bytes; i += 256) {
    for (int v = 0; v < 4; ++v) {
      if constexpr (kAhead > 0) {
        _mm_prefetch(data + i + kAhead + 64 * v, static_cast<_mm_hint>(kHint));
      }
      acc[v] = _mm512_add_epi64(acc[v], _mm512_load_si512(data + i + 64 * v));
    }
  }
  // Summed through memory: GCC 12's _mm512_reduce_add_epi64 reads an undefined vector.
  int64_t lanes[8];
  _mm512_storeu_si512(
      lanes, _mm512_add_epi64(_mm512_add_epi64(acc[0], acc[1]), _mm512_add_epi64(acc[2], acc[3])));
  int64_t sum = 0;
  for (int64_t lane : lanes) sum += lane;
  return sum;
}

// The same with 256-bit loads, for CPUs without AVX-512.
template <int kAhead, int kHint>
__attribute__((target("avx2"))) int64_t Read256(const char* data, int64_t bytes) {
  __m256i acc[8];
  for (__m256i& a : acc) a = _mm256_setzero_si256();
  for (int64_t i = 0; i < bytes; i += 256) {
    for (int v = 0; v < 8; ++v) {
      if constexpr (kAhead > 0) {
        if (v % 2 == 0) _mm_prefetch(data + i + kAhead + 32 * v, static_cast<_mm_hint>(kHint));
      }
      acc[v] = _mm256_add_epi64(
          acc[v], _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 32 * v)));
    }
  }
  int64_t lanes[4];
  for (int v = 1; v < 8; ++v) acc[0] = _mm256_add_epi64(acc[0], acc[v]);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), acc[0]);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

struct Loop {
  const char* name;
  ReadFn fn;
};

// The read loops this CPU runs: its widest loads without prefetch, with prefetch 1 and 4 KiB
// ahead into L1, and 1 KiB ahead non-temporally.
std::vector<Loop> Loops() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    return {{"avx512", Read512<0, _MM_HINT_T0>},
            {"avx512 prefetch 1 KiB", Read512<1024, _MM_HINT_T0>},
            {"avx512 prefetch 4 KiB", Read512<4096, _MM_HINT_T0>},
            {"avx512 prefetchnta 1 KiB", Read512<1024, _MM_HINT_NTA>}};
  }
  return {{"avx2", Read256<0, _MM_HINT_T0>},
          {"avx2 prefetch 1 KiB", Read256<1024, _MM_HINT_T0>},
          {"avx2 prefetch 4 KiB", Read256<4096, _MM_HINT_T0>},
          {"avx2 prefetchnta 1 KiB", Read256<1024, _MM_HINT_NTA>}};
}

// How the buffer is split over the pool's threads.
enum class Split { kHalves, kPoolRanges, kInterleaved };
constexpr Split kSplits[] = {Split::kHalves, Split::kPoolRanges, Split::kInterleaved};
const char* SplitName(Split split) {
  switch (split) {
    case Split::kHalves:
      return "one range per thread";
    case Split::kPoolRanges:
      return "the pool's ranges of 1 MiB units";
    default:
      return "64 KiB chunks dealt in turn";
  }
}

// Seconds of one read of `bytes` at `data` by `loop`, split as `split`.
double TimeRead(kernels::ThreadPool& pool, const char* data, int64_t bytes, ReadFn loop,
                Split split) {
  const int64_t threads = pool.num_threads();
  std::atomic<int64_t> sink{0};
  const auto start = std::chrono::steady_clock::now();
  if (split == Split::kPoolRanges) {
    constexpr int64_t kUnit = int64_t{1} << 20;
    pool.ParallelFor(bytes / kUnit, 1, [&](int64_t begin, int64_t end) {
      sink += loop(data + begin * kUnit, (end - begin) * kUnit);
    });
  } else {
    pool.ParallelFor(threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        if (split == Split::kHalves) {
          sink += loop(data + bytes / threads * t, bytes / threads);
          continue;
        }
        constexpr int64_t kChunk = int64_t{64} << 10;
        for (int64_t at = t * kChunk; at < bytes; at += threads * kChunk) {
          sink += loop(data + at, kChunk);
        }
      }
    });
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (sink.load() == 42) std::printf(" ");  // Keeps the sums, which are never 42.
  return seconds;
}

}  // namespace

ReadRoofline::ReadRoofline(kernels::ThreadPool& pool) : pool_(pool) {
  const size_t bytes = StreamingBytes();
  absl::StatusOr<base::ZeroPages> buffer = base::ZeroPages::Map(bytes, /*huge_pages=*/true);
  if (!buffer.ok()) return;  // Every measure then reads 0 bytes/s.
  buffer_ = *std::move(buffer);
  std::memset(buffer_.data(), 1, buffer_.size());  // Resident before any read is timed.
}

ReadBandwidth ReadRoofline::MeasureAll() {
  const std::vector<Loop> loops = Loops();
  const int64_t bytes = static_cast<int64_t>(buffer_.size());
  std::vector<double> best(loops.size() * std::size(kSplits), 0.0);
  // Interleaved rounds, so that a neighbour's burst on the shared memory does not favour one.
  for (int round = 0; round < 3 && bytes > 0; ++round) {
    for (size_t l = 0; l < loops.size(); ++l) {
      for (size_t s = 0; s < std::size(kSplits); ++s) {
        const double rate = bytes / TimeRead(pool_, buffer_.data(), bytes, loops[l].fn, kSplits[s]);
        best[l * std::size(kSplits) + s] = std::max(best[l * std::size(kSplits) + s], rate);
      }
    }
  }
  ReadBandwidth result;
  for (size_t i = 0; i < best.size(); ++i) {
    const std::string name = absl::StrCat(loops[i / std::size(kSplits)].name, ", ",
                                          SplitName(kSplits[i % std::size(kSplits)]));
    absl::StrAppend(&result.all, result.all.empty() ? "" : "; ", name,
                    absl::StrFormat(" %.1f", best[i] / 1e9));
    if (best[i] > result.bytes_per_second) {
      result.bytes_per_second = best[i];
      result.best = name;
      best_ = i;
    }
  }
  return result;
}

double ReadRoofline::MeasureAgain() {
  double best = 0;
  for (int i = 0; i < 3; ++i) best = std::max(best, MeasureOnce());
  return best;
}

double ReadRoofline::MeasureOnce() {
  const int64_t bytes = static_cast<int64_t>(buffer_.size());
  if (bytes == 0) return 0;
  const Loop loop = Loops()[best_ / std::size(kSplits)];
  return bytes /
         TimeRead(pool_, buffer_.data(), bytes, loop.fn, kSplits[best_ % std::size(kSplits)]);
}

size_t StreamingBytes() {
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const size_t bytes = std::max<size_t>(size_t{1} << 30, size_t{8} * std::max(llc, 0L));
  return bytes >> 20 << 20;
}

int RunThreads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

namespace {
ReadRoofline* run_roofline = nullptr;
}  // namespace

void SetRunRoofline(ReadRoofline* roofline) { run_roofline = roofline; }

ReadRoofline& RunRoofline() {
  assert(run_roofline != nullptr);
  return *run_roofline;
}

std::string CpuName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string name = "unknown CPU", family = "?", model = "?";
  // The first processor's lines, up to the blank line after them.
  for (std::string line; std::getline(cpuinfo, line) && !line.empty();) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon + 2 > line.size()) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = line.substr(colon + 2);
    if (key == "model name") name = value;
    if (key == "cpu family") family = value;
    if (key == "model") model = value;
  }
  __builtin_cpu_init();
  const char* vectors = __builtin_cpu_supports("avx512f") ? "AVX-512"
                        : __builtin_cpu_supports("avx2")  ? "AVX2"
                                                          : "no AVX2";
  // AMX only where the OS grants its tiles, as the kernels need.
  const char* tiles = kernels::CpuRunsQ8Isa(kernels::Q8Isa::kAmx) ? ", AMX" : "";
  return absl::StrCat(name, " (family ", family, ", model ", model, "; ", vectors, tiles, ")");
}

}  // namespace arbor::worker
