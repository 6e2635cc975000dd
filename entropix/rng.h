// Counter-based randomness (Philox4x32-10, Salmon et al., SC'11): a value is a pure function of
// its key (job seed, position, branch id, draw index), so a job replays identically whatever the
// batching, the worker, the thread or the order in which steps are computed.
#ifndef ARBOR_ENTROPIX_RNG_H_
#define ARBOR_ENTROPIX_RNG_H_

#include <array>
#include <cstdint>

namespace arbor::entropix {

struct RngKey {
  uint64_t seed = 0;        // Job seed.
  uint32_t position = 0;    // Sequence position the draw is for.
  uint32_t branch_id = 0;   // Branch of the search tree (0 on the main path).
  uint32_t draw_index = 0;  // Which draw at that (position, branch): samples, candidates, ...

  RngKey WithDraw(uint32_t draw) const {
    RngKey key = *this;
    key.draw_index = draw;
    return key;
  }
};

// The Philox4x32 bijection with 10 rounds: 128-bit counter, 64-bit key.
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// A uniform double in [0, 1) with 53 random bits: counter (position, branch_id, draw_index, 0),
// key = the seed's two halves.
double UniformDouble(const RngKey& key);

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_RNG_H_
