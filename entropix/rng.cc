#include "entropix/rng.h"

namespace arbor::entropix {
namespace {

// Multipliers and Weyl key increments of the reference Philox4x32 (Random123).
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

}  // namespace

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, c[0], &hi0, &lo0);
    MulHiLo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

double UniformDouble(const RngKey& key) {
  const std::array<uint32_t, 4> out =
      Philox4x32({key.position, key.branch_id, key.draw_index, 0u},
                 {static_cast<uint32_t>(key.seed), static_cast<uint32_t>(key.seed >> 32)});
  const uint64_t bits = ((static_cast<uint64_t>(out[0]) << 32) | out[1]) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

}  // namespace arbor::entropix
