// repacked_ab.sh's race: the working tree's AVX-512 VNNI kernel of the per-32 repacked rows
// against a base revision's (race.h), on one thread. Prints per case the medians and the median
// and quartiles of the per-round time ratios, after checking that both give the same bits. The
// weights and activations are random bytes with fixed scales: the speed does not depend on them.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "bench/worker/ab/race.h"
#include "kernels/quant/q8_activations.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::repacked_ab {
void Multiply(const void* params, int64_t n);
}  // namespace arbor::repacked_ab
namespace arbor_base::repacked_ab {
void Multiply(const void* params, int64_t n);
}  // namespace arbor_base::repacked_ab

namespace {

using namespace arbor::kernels;

// `bits` 4 (Q4_0, Q4_1), 5 (Q5_0, Q5_1) or 8 (Q8_0) weights, n × k, against m activation rows.
struct Case {
  int bits;
  int64_t n, k, m;
};

// The case's repacked groups: random bytes, every half-precision scale and offset 2^-7.
template <typename Block>
std::vector<Block> RandomGroups(const Case& c, std::mt19937& rng) {
  std::vector<Block> blocks(c.n / 16 * c.k / 32);
  for (Block& block : blocks) {
    auto* bytes = reinterpret_cast<uint8_t*>(&block);
    for (size_t i = 0; i < sizeof(Block); ++i) bytes[i] = static_cast<uint8_t>(rng());
    for (uint16_t& d : block.d) d = 0x2000;
    if constexpr (!std::is_same_v<Block, Q8x16Block>) {
      for (uint16_t& m : block.m) m = 0x2000;
    }
  }
  return blocks;
}

template <typename Block>
int RaceOf(const Case& c, WeightType type, double budget) {
  std::mt19937 rng(7);
  const std::vector<Block> w = RandomGroups<Block>(c, rng);
  const int64_t chunks = c.k / 32;
  std::vector<int8_t> q(c.m * 32 * chunks);
  std::vector<float> scales(c.m * 8 * chunks), sums(SumsSize(c.m, chunks));
  std::vector<int32_t> q_sums(c.m * chunks);
  for (int8_t& v : q) v = static_cast<int8_t>(rng());
  std::uniform_real_distribution<float> uniform(0.01f, 0.1f);
  for (float& v : scales) v = uniform(rng);
  for (float& v : sums) v = uniform(rng);
  for (int32_t& v : q_sums) v = static_cast<int32_t>(rng() % 8192) - 4096;
  std::vector<float> base_out(c.m * c.n), work_out(c.m * c.n);
  Q8DotParams base{.w = w.data(),
                   .w_type = type,
                   .x = {q.data(), scales.data(), sums.data(), q_sums.data(), chunks, chunks},
                   .m = c.m,
                   .out = base_out.data(),
                   .out_stride = c.n};
  Q8DotParams work = base;
  work.out = work_out.data();
  arbor_base::repacked_ab::Multiply(&base, c.n);
  arbor::repacked_ab::Multiply(&work, c.n);
  if (std::memcmp(base_out.data(), work_out.data(), base_out.size() * sizeof(float)) != 0) {
    std::printf("the two trees' outputs differ\n");
    return 1;
  }
  const arbor::bench::RaceResult result =
      arbor::bench::Race([&] { arbor_base::repacked_ab::Multiply(&base, c.n); },
                         [&] { arbor::repacked_ab::Multiply(&work, c.n); }, budget);
  std::printf("%4d %5lld %5lld %5lld ", c.bits, static_cast<long long>(c.n),
              static_cast<long long>(c.k), static_cast<long long>(c.m));
  result.Print();
  return 0;
}

int Race(const Case& c, double budget) {
  if (c.bits == 8) return RaceOf<Q8x16Block>(c, WeightType::kQ8x16, budget);
  if (c.bits == 5) return RaceOf<Q5x16Block>(c, WeightType::kQ5x16, budget);
  return RaceOf<Q4x16Block>(c, WeightType::kQ4x16, budget);
}

}  // namespace

int main(int argc, char** argv) {
  // Args: seconds per case (default 4); then cases as bits,n,k,m.
  const double budget = argc > 1 ? std::atof(argv[1]) : 4.0;
  std::vector<Case> cases;
  for (int a = 2; a < argc; ++a) {
    Case c;
    long long n, k, m;
    if (std::sscanf(argv[a], "%d,%lld,%lld,%lld", &c.bits, &n, &k, &m) != 4 ||
        (c.bits != 4 && c.bits != 5 && c.bits != 8) || n <= 0 || n % 16 != 0 || k <= 0 ||
        k % 32 != 0 || m <= 0) {
      std::fprintf(stderr,
                   "a case is bits,n,k,m: bits 4, 5 or 8, n a multiple of 16, k of 32: %s\n",
                   argv[a]);
      return 2;
    }
    c.n = n;
    c.k = k;
    c.m = m;
    cases.push_back(c);
  }
  if (cases.empty()) {  // SmolLM2's gate/up and down (Q4_1); the 1B shape's Q8_0 q_proj.
    for (int64_t m : {16, 64, 256}) {
      cases.push_back({4, 1536, 576, m});
      cases.push_back({4, 576, 1536, m});
    }
    cases.push_back({8, 2048, 2048, 256});
  }
  std::printf("bits     n     k     m rounds    base_us    work_us base/work quartiles\n");
  for (const Case& c : cases) {
    if (Race(c, budget) != 0) return 1;
  }
  return 0;
}
