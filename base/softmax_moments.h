// Mergeable one-pass moments of a softmax: the state behind every entropy in entropix.
//
// For inputs x_i (logits, or a head's attention scores) the state holds, relative to the running
// maximum m, the sums Σe = Σ exp(x_i − m), Σe·x = Σ exp(x_i − m)·(x_i − m) and
// Σe·x² = Σ exp(x_i − m)·(x_i − m)². From them, with y = x − m and p = softmax(x):
//   log Σ exp(x) = m + log Σe
//   H (nats)     = log Σe − Σe·x / Σe
//   V (nats²)    = Σe·x² / Σe − (Σe·x / Σe)²
// Stability: shifting by the maximum keeps every exponent ≤ 0 (no overflow for any finite input,
// whatever its offset), and the sums are kept in float64 so the E[y²] − E[y]² difference loses
// nothing that matters at fp32 output precision. Two states merge exactly (rescale the one with
// the smaller maximum), so a GPU kernel can reduce a row in chunks, in any order, and hand its
// partial states to the final combine here. Within one chunk the CPU takes the maximum first and
// then the shifted sums (two passes over data already in cache), which vectorises better than a
// rescale on every new maximum.
#ifndef ARBOR_BASE_SOFTMAX_MOMENTS_H_
#define ARBOR_BASE_SOFTMAX_MOMENTS_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "base/host_device.h"

namespace arbor::base {

struct SoftmaxMoments {
  double max = -std::numeric_limits<double>::infinity();  // Largest finite input seen.
  double sum = 0.0;                                       // Σ exp(x − max).
  double sum_x = 0.0;                                     // Σ exp(x − max)·(x − max).
  double sum_xx = 0.0;                                    // Σ exp(x − max)·(x − max)².

  // True while no finite input has been seen (then the metrics below are undefined).
  ARBOR_HOST_DEVICE bool empty() const { return sum == 0.0; }

  // Adds `count` inputs that all equal `value` (finite), e.g. REFERENCE mode's empty slots.
  ARBOR_HOST_DEVICE void AddConstant(double value, double count);
  // Adds the inputs x[0..n). They must be finite or −inf (−inf contributes nothing); callers
  // validate first (see FindNonFinite). The same as Merge(OfChunk(x, n)).
  void AddChunk(const float* x, int64_t n) { Merge(OfChunk(x, n)); }
  // The state of x[0..n) alone (empty when nothing is finite), so that chunks may be reduced
  // apart and merged afterwards in their order, with AddChunk's bits.
  static SoftmaxMoments OfChunk(const float* x, int64_t n);
  // Combines with another state, as if its inputs had been added here.
  ARBOR_HOST_DEVICE void Merge(const SoftmaxMoments& other);

  ARBOR_HOST_DEVICE double LogSumExp() const { return max + ::log(sum); }  // Natural log.
  double EntropyNats() const;                                              // ≥ 0.
  double VarentropyNats() const;  // nats², ≥ 0 (rounding clamped).
};

// Index of the first NaN or +inf in x[0..n), or −1 when every entry is finite or −inf.
int64_t FindNonFinite(const float* x, int64_t n);

// The largest of x[0..n) (no NaN), −inf when n = 0. Vectorised: rows are 128,256 wide.
float MaxOf(const float* x, int64_t n);

// Inline, host and device: a CUDA kernel merges chunk states with this very code. (Copies, not
// default-constructed states: the default member initialisers are host-only constexpr calls.)
ARBOR_HOST_DEVICE inline void SoftmaxMoments::AddConstant(double value, double count) {
  if (count <= 0.0) return;
  SoftmaxMoments constant = *this;
  constant.max = value;
  constant.sum = count;  // exp(0) each; the shifted value is 0, so Σe·x = Σe·x² = 0.
  constant.sum_x = 0.0;
  constant.sum_xx = 0.0;
  Merge(constant);
}

ARBOR_HOST_DEVICE inline void SoftmaxMoments::Merge(const SoftmaxMoments& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  // Re-express the state with the smaller maximum relative to the larger one:
  // y' = y − d with d = M − m ≥ 0 and weights scaled by exp(−d).
  const bool this_is_hi = max >= other.max;
  const SoftmaxMoments hi = this_is_hi ? *this : other;
  const SoftmaxMoments lo = this_is_hi ? other : *this;
  const double d = hi.max - lo.max;
  const double c = ::exp(-d);
  *this = hi;
  if (c == 0.0) return;  // The smaller state's weight underflows; skipping it also avoids 0·inf.
  sum = hi.sum + c * lo.sum;
  sum_x = hi.sum_x + c * (lo.sum_x - d * lo.sum);
  sum_xx = hi.sum_xx + c * (lo.sum_xx - 2.0 * d * lo.sum_x + d * d * lo.sum);
}

inline constexpr double kLn2 = 0.69314718055994530942;

}  // namespace arbor::base

#endif  // ARBOR_BASE_SOFTMAX_MOMENTS_H_
