// Named policies: the classic decoders, for clients that ask for those — greedy decoding (OpenAI's
// temperature 0, `arbor eval`'s greedy) and plain sampling (the eval's baseline), both through
// the same decision matrix and sampler as every other policy, so a comparison between them and
// search measures the policy, not a second code path — and the TRACE searches from the
// literature (docs/ARCHITECTURE.md §4.5).
#ifndef ARBOR_POLICY_POLICY_PRESETS_H_
#define ARBOR_POLICY_POLICY_PRESETS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/entropix.pb.h"

namespace arbor::policy {

// Only row 1 (ARGMAX) can match: every H < 64 bits and V < 4096 bits².
v1::PolicyConfig GreedyPolicy();

// Only row 5 (ADAPTIVE) can match, with its adjustments zeroed and one draw: a plain sample at
// T 0.7, min_p 0.05, top_p 1, top_k 100 (callers may change the sampling parameters).
v1::PolicyConfig PlainSamplingPolicy();

// CoT-decoding (Wang & Zhou, arXiv 2402.10200): the 3 most likely first tokens with p at least
// kCotDecodingMinP·p_max, each continued greedily; the answer with the largest summed margin
// wins. Chosen on development items (docs/SEARCH_QUALITY.md): the floor forks only where the
// model holds another first token at least half as likely as its choice, so a confident question
// costs one trace; 0.1 forked nearly everywhere, spent 1.5× the tokens and was no more accurate.
inline constexpr float kCotDecodingMinP = 0.5f;
v1::PolicyConfig CotDecodingPolicy();

// Entropy-gated branching (EAGer, arXiv 2510.11170): greedy, forking the 2 most likely tokens
// where H > kEagerForkEntropy bits, nested up to 4 deep, at most 6 traces; summed margins pick.
inline constexpr float kEagerForkEntropy = 3.0f;
v1::PolicyConfig EagerPolicy();

// Confidence-filtered voting (DeepConf, arXiv 2508.15260), online: up to 8 traces sampled at
// T 0.2 (with the sampling defaults' top_p, top_k, min_p) from distinct first tokens; the first 2
// run whole (the warm-up), and each later one stops once its confidence over 16 tokens falls
// below the warm-up traces' median lowest; the more confident half of the finished traces vote,
// weighted by their lowest group confidence. T and the warm-up were chosen on development items
// (docs/SEARCH_QUALITY.md): hotter traces lose accuracy on a small model.
v1::PolicyConfig DeepConfPolicy();

// The policy a name selects (CLI --policy_mode, `arbor up --policy`): greedy, sample,
// cot_decoding, eager, deepconf (the presets above), or search, canonical, trace (only the mode;
// every other field keeps the server default). INVALID_ARGUMENT listing the names otherwise.
absl::StatusOr<v1::PolicyConfig> NamedPolicy(absl::string_view name);

}  // namespace arbor::policy

#endif  // ARBOR_POLICY_POLICY_PRESETS_H_
