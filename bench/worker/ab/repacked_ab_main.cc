// repacked_ab.sh's race: the working tree's AVX-512 VNNI kernels of the repacked rows (per-32
// groups of sixteen, K-quant groups of eight) against a base revision's (race.h), on one thread.
// Prints per case the medians and the median and quartiles of the per-round time ratios, after
// checking that both give the same bits. Weights and activations are random bytes with fixed
// scales: the speed does not depend on them.
//
// A case ending in ",mem" streams its weights from memory instead, as a decode step does: they
// are copied into huge pages until the copies fill 8 last-level caches (1 GiB at least), and each
// side's call multiplies every copy in turn on two threads, each a static half of the groups, a
// barrier after each copy. There how far ahead a kernel prefetches shows; in cache it does not.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench/worker/ab/race.h"
#include "kernels/quant/q8_activations.h"
#include "kernels/quant/q8k_activations.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::repacked_ab {
void Multiply(const void* params, int64_t n);
void MultiplyKQuant(const void* params, int64_t n);
}  // namespace arbor::repacked_ab
namespace arbor_base::repacked_ab {
void Multiply(const void* params, int64_t n);
void MultiplyKQuant(const void* params, int64_t n);
}  // namespace arbor_base::repacked_ab

namespace {

using namespace arbor::kernels;

// A weight type's name in a case, its repacked type, its rows per group and values per block.
struct Type {
  const char* name;
  WeightType repacked;
  int64_t group_rows, block_values;
};
constexpr Type kTypes[] = {
    {"q4", WeightType::kQ4x16, 16, 32},  {"q5", WeightType::kQ5x16, 16, 32},
    {"q8", WeightType::kQ8x16, 16, 32},  {"q4k", WeightType::kQ4Kx8, 8, 256},
    {"q5k", WeightType::kQ5Kx8, 8, 256}, {"q6k", WeightType::kQ6Kx8, 8, 256}};

struct Case {
  const Type* type;
  int64_t n, k, m;
  bool memory = false;  // Weights streamed from memory on two threads (",mem").
};

// Copies of one matrix's bytes in huge pages, `stride` apart, filling 8 last-level caches.
class Copies {
 public:
  Copies(const void* matrix, size_t bytes) : stride_((bytes + 63) / 64 * 64) {
    const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    const size_t total = std::max<size_t>(size_t{1} << 30, size_t{8} * std::max(llc, 0L));
    count_ = static_cast<int>((total + stride_ - 1) / stride_);
    mapped_ = count_ * stride_ + kHugePage;
    void* at = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) {
      std::fprintf(stderr, "cannot map %zu bytes for the copies\n", mapped_);
      std::exit(1);
    }
    map_ = static_cast<char*>(at);
    data_ = map_ + (kHugePage - reinterpret_cast<uintptr_t>(map_) % kHugePage) % kHugePage;
    madvise(data_, count_ * stride_, MADV_HUGEPAGE);
    for (int i = 0; i < count_; ++i) std::memcpy(data_ + i * stride_, matrix, bytes);
  }
  ~Copies() { munmap(map_, mapped_); }
  Copies(const Copies&) = delete;
  Copies& operator=(const Copies&) = delete;

  int count() const { return count_; }
  const char* at(int i) const { return data_ + i * stride_; }

 private:
  static constexpr size_t kHugePage = size_t{2} << 20;
  size_t stride_, mapped_ = 0;
  int count_ = 0;
  char* map_ = nullptr;
  char* data_ = nullptr;
};

// One side's call in memory mode: every copy in turn, on two threads, each the weight rows of
// its half of the groups (`group_bytes` each), a barrier after each copy.
template <typename Params>
void StreamCopies(void (*side)(const void*, int64_t), const Params& params, const Case& c,
                  const Copies& copies, size_t group_bytes) {
  const int64_t rows = c.type->group_rows, half = c.n / rows / 2 * rows;
  std::barrier sync(2);
  auto body = [&](int t) {
    Params p = params;
    std::vector<float> out(c.m * c.n);
    p.out = out.data() + (t == 0 ? 0 : half);
    for (int i = 0; i < copies.count(); ++i) {
      p.w = copies.at(i) + (t == 0 ? 0 : half / rows * group_bytes);
      side(&p, t == 0 ? half : c.n - half);
      sync.arrive_and_wait();
    }
  };
  std::thread other(body, 1);
  body(0);
  other.join();
}

constexpr uint16_t kHalfScale = 0x2000;  // 2^-7.

// Random bytes, then every half-precision scale and offset kHalfScale and the K-quants' 6-bit
// scales and minimums below 64.
template <typename Block>
std::vector<Block> RandomBlocks(int64_t count, std::mt19937& rng) {
  std::vector<Block> blocks(count);
  for (Block& block : blocks) {
    auto* bytes = reinterpret_cast<uint8_t*>(&block);
    for (size_t i = 0; i < sizeof(Block); ++i) bytes[i] = static_cast<uint8_t>(rng());
    if constexpr (std::is_same_v<Block, Q5Kx8Block>) {
      block.low = RandomBlocks<Q4Kx8Block>(1, rng)[0];
    } else if constexpr (std::is_same_v<Block, Q4Kx8Block>) {
      for (uint16_t& d : block.d) d = kHalfScale;
      for (uint16_t& d : block.dmin) d = kHalfScale;
      for (auto* field : {&block.scales, &block.mins}) {
        for (auto& row : *field) {
          for (uint8_t& v : row) v &= 63;
        }
      }
    } else if constexpr (std::is_same_v<Block, Q6Kx8Block>) {
      for (uint16_t& d : block.d) d = kHalfScale;
      for (int32_t& bias : block.bias) bias %= 1 << 20;
    } else {
      for (uint16_t& d : block.d) d = kHalfScale;
      if constexpr (!std::is_same_v<Block, Q8x16Block>) {
        for (uint16_t& m : block.m) m = kHalfScale;
      }
    }
  }
  return blocks;
}

template <typename T>
void Fill(std::vector<T>& v, size_t size, std::mt19937& rng) {
  v.resize(size);
  std::uniform_real_distribution<float> uniform(0.01f, 0.1f);
  for (T& x : v) x = std::is_floating_point_v<T> ? uniform(rng) : static_cast<T>(rng() % 200);
}

// Both trees' kernel over one case's params (the second side's `out` its own): the same bits
// first, then the race.
template <typename Params>
int Race(const Case& c, void (*base)(const void*, int64_t), void (*work)(const void*, int64_t),
         const Params& params, size_t group_bytes, std::vector<float>& base_out, double budget) {
  Params work_params = params;
  std::vector<float> work_out(base_out.size());
  work_params.out = work_out.data();
  base(&params, c.n);
  work(&work_params, c.n);
  if (std::memcmp(base_out.data(), work_out.data(), base_out.size() * sizeof(float)) != 0) {
    std::printf("the two trees' outputs differ\n");
    return 1;
  }
  arbor::bench::RaceResult result;
  if (c.memory) {
    const Copies copies(params.w, c.n / c.type->group_rows * group_bytes);
    result =
        arbor::bench::Race([&] { StreamCopies(base, params, c, copies, group_bytes); },
                           [&] { StreamCopies(work, params, c, copies, group_bytes); }, budget);
  } else {
    result =
        arbor::bench::Race([&] { base(&params, c.n); }, [&] { work(&work_params, c.n); }, budget);
  }
  std::printf("%4s %5lld %5lld %5lld%s ", c.type->name, static_cast<long long>(c.n),
              static_cast<long long>(c.k), static_cast<long long>(c.m), c.memory ? " mem" : "");
  result.Print();
  return 0;
}

template <typename Block>
int RacePer32(const Case& c, double budget) {
  std::mt19937 rng(7);
  const std::vector<Block> w = RandomBlocks<Block>(c.n / 16 * c.k / 32, rng);
  const int64_t chunks = c.k / 32;
  std::vector<int8_t> q;
  std::vector<float> scales, sums;
  std::vector<int32_t> q_sums;
  Fill(q, c.m * 32 * chunks, rng);
  Fill(scales, c.m * 8 * chunks, rng);
  Fill(sums, SumsSize(c.m, chunks), rng);
  Fill(q_sums, c.m * chunks, rng);
  std::vector<float> out(c.m * c.n);
  const Q8DotParams p{.w = w.data(),
                      .w_type = c.type->repacked,
                      .x = {q.data(), scales.data(), sums.data(), q_sums.data(), chunks, chunks},
                      .m = c.m,
                      .out = out.data(),
                      .out_stride = c.n};
  return Race(c, arbor_base::repacked_ab::Multiply, arbor::repacked_ab::Multiply, p,
              chunks * sizeof(Block), out, budget);
}

template <typename Block>
int RaceKQuant(const Case& c, double budget) {
  std::mt19937 rng(7);
  const int64_t blocks = c.k / 256;
  const std::vector<Block> w = RandomBlocks<Block>(c.n / 8 * blocks, rng);
  std::vector<std::vector<int8_t>> q(c.m);
  std::vector<std::vector<float>> d(c.m), scaled_sums(c.m);
  std::vector<std::vector<int16_t>> sums(c.m);
  std::vector<std::vector<uint8_t>> biased(c.m);
  std::vector<Q8KRow> rows(c.m);
  for (int64_t r = 0; r < c.m; ++r) {
    Fill(q[r], 256 * blocks, rng);
    Fill(d[r], blocks, rng);
    Fill(sums[r], 16 * blocks, rng);
    Fill(scaled_sums[r], 16 * blocks, rng);
    Fill(biased[r], 256 * blocks, rng);
    rows[r] = {q[r].data(),           d[r].data(),      sums[r].data(),
               scaled_sums[r].data(), biased[r].data(), blocks};
  }
  std::vector<float> out(c.m * c.n);
  const Q8KDotParams p{w.data(), c.type->repacked, rows.data(), c.m, out.data(), c.n};
  return Race(c, arbor_base::repacked_ab::MultiplyKQuant, arbor::repacked_ab::MultiplyKQuant, p,
              blocks * sizeof(Block), out, budget);
}

int RaceCase(const Case& c, double budget) {
  switch (c.type->repacked) {
    case WeightType::kQ4x16:
      return RacePer32<Q4x16Block>(c, budget);
    case WeightType::kQ5x16:
      return RacePer32<Q5x16Block>(c, budget);
    case WeightType::kQ8x16:
      return RacePer32<Q8x16Block>(c, budget);
    case WeightType::kQ4Kx8:
      return RaceKQuant<Q4Kx8Block>(c, budget);
    case WeightType::kQ5Kx8:
      return RaceKQuant<Q5Kx8Block>(c, budget);
    default:
      return RaceKQuant<Q6Kx8Block>(c, budget);
  }
}

// A case `type,n,k,m[,mem]`, or false.
bool ParseCase(const char* text, Case& c) {
  char name[8], where[4] = "";
  long long n, k, m;
  const int fields = std::sscanf(text, "%7[a-z0-9],%lld,%lld,%lld,%3s", name, &n, &k, &m, where);
  if (fields < 4 || (fields == 5 && std::string(where) != "mem")) return false;
  c.memory = fields == 5;
  for (const Type& type : kTypes) {
    if (name == std::string(type.name)) c.type = &type;
  }
  if (c.type == nullptr || n <= 0 || n % c.type->group_rows != 0 || k <= 0 ||
      k % c.type->block_values != 0 || m <= 0) {
    return false;
  }
  c.n = n;
  c.k = k;
  c.m = m;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Args: seconds per case (default 4); then cases as type,n,k,m.
  const double budget = argc > 1 ? std::atof(argv[1]) : 4.0;
  std::vector<Case> cases;
  for (int a = 2; a < argc; ++a) {
    Case c{};
    if (!ParseCase(argv[a], c)) {
      std::fprintf(stderr,
                   "a case is type,n,k,m[,mem]: type q4, q5, q8 (n a multiple of 16, k of 32) or "
                   "q4k, q5k, q6k (n a multiple of 8, k of 256); mem: from memory: %s\n",
                   argv[a]);
      return 2;
    }
    cases.push_back(c);
  }
  if (cases.empty()) {  // SmolLM2's gate/up and down (Q4_1); the 1B shape's Q8_0 q_proj, Q4_K
                        // gate/up and Q6_K down.
    for (int64_t m : {16, 64, 256}) {
      cases.push_back({&kTypes[0], 1536, 576, m});
      cases.push_back({&kTypes[0], 576, 1536, m});
    }
    cases.push_back({&kTypes[2], 2048, 2048, 256});
    for (int64_t m : {1, 8, 32}) {
      cases.push_back({&kTypes[3], 8192, 2048, m});
      cases.push_back({&kTypes[5], 2048, 8192, m});
    }
  }
  std::printf("type     n     k     m rounds    base_us    work_us base/work quartiles\n");
  for (const Case& c : cases) {
    if (RaceCase(c, budget) != 0) return 1;
  }
  return 0;
}
