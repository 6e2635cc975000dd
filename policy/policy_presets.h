// Policies that reduce entropix to the classic decoders, for clients that ask for those:
// greedy decoding (OpenAI's temperature 0, `arbor eval`'s greedy) and plain sampling (the eval's
// baseline). Both run through the same decision matrix and sampler as every other policy, so a
// comparison between them and search measures the policy, not a second code path.
#ifndef ARBOR_POLICY_POLICY_PRESETS_H_
#define ARBOR_POLICY_POLICY_PRESETS_H_

#include "arbor/v1/entropix.pb.h"

namespace arbor::rpc {

// Only row 1 (ARGMAX) can match: every H < 64 bits and V < 4096 bits².
v1::PolicyConfig GreedyPolicy();

// Only row 5 (ADAPTIVE) can match, with its adjustments zeroed and one draw: a plain sample at
// T 0.7, min_p 0.05, top_p 1, top_k 100 (callers may change the sampling parameters).
v1::PolicyConfig PlainSamplingPolicy();

}  // namespace arbor::rpc

#endif  // ARBOR_POLICY_POLICY_PRESETS_H_
