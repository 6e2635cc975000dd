#include "tools/eval/tasks/rng.h"

namespace arbor::tools::eval {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t StreamSeed(std::string_view family, int level, uint64_t seed) {
  // FNV-1a over the name's bytes: fixed by its definition, unlike std::hash.
  uint64_t name_hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : family) {
    name_hash = (name_hash ^ c) * 0x100000001b3ULL;
  }
  uint64_t h = SplitMix64(name_hash);
  h = SplitMix64(h ^ static_cast<uint64_t>(static_cast<uint32_t>(level)));
  return SplitMix64(h ^ seed);
}

uint64_t TaskRng::Below(uint64_t n) {
  // 2^64 mod n values at the bottom of the range would make the low residues more likely;
  // redraw when one comes up.
  const uint64_t threshold = (0 - n) % n;
  uint64_t x;
  do {
    x = engine_();
  } while (x < threshold);
  return x % n;
}

int64_t TaskRng::Between(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (span == 0) return static_cast<int64_t>(engine_());  // the full 64-bit range
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + Below(span));
}

}  // namespace arbor::tools::eval
