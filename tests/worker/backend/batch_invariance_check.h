// The batch-invariance property every backend keeps under --numerics=invariant, as checks over
// one backend: a sequence's logits and last-layer attention scores (and, where compared, its row
// reduction) are bit-identical whatever shares its forward — other sequences' prefill or decode
// rows before or after it, its own prompt chunked differently (which is also what a prefix-cache
// hit does: the prefix's K/V were written by another step), and the sibling branches of a search
// decoding beside it over their shared blocks. Fresh random tokens each call (seed printed). Shared
// by the CPU and CUDA backend tests.
#ifndef ARBOR_TESTS_WORKER_BACKEND_BATCH_INVARIANCE_CHECK_H_
#define ARBOR_TESTS_WORKER_BACKEND_BATCH_INVARIANCE_CHECK_H_

#include "worker/backend/backend.h"

namespace arbor::worker::testing {

// KV blocks (of 16 tokens) the checks' sequences take: create the backend with at least these.
inline constexpr int kInvarianceBlocks = 13 * 8 + 32;

// What the checks compare besides the logits and scores.
struct Compared {
  // Each row's reduction too (metrics, 20 candidates, a probed token, attention statistics),
  // which a backend may compute differently for a row alone (the CPU backend shares a lone row's
  // among its threads).
  bool reductions = false;
};

// Sequence 0's prefill and decode alone, then beside other prefills, chunked at various cuts,
// and among 1–12 other decode rows at various positions.
void CheckInvariance(Backend& backend, Compared compared = {});
// Ten sibling branches over a shared 80-token prefix decode a token each in one step and each
// gets the bits its step alone gives.
void CheckSiblings(Backend& backend, Compared compared = {});

}  // namespace arbor::worker::testing

#endif  // ARBOR_TESTS_WORKER_BACKEND_BATCH_INVARIANCE_CHECK_H_
