// The decoding strategies `arbor eval` compares, each turned into the Generate requests that
// produce one answer per (item, seed):
//   greedy            every step ARGMAX (deterministic: one run serves every seed)
//   sample            plain sampling: temperature, top_p, top_k (≤ 100), min_p (≥ 0.01)
//   best_of_n         n samples, the one with the highest mean token logprob answers
//   self_consistency  n samples, the most frequent extracted answer answers
//   canonical         the original entropix sampler (CANONICAL mode)
//   search            entropix search: branch, insert, backspace (SEARCH mode)
//   cot_decoding      CoT-decoding (TRACE mode): the top k first tokens, each continued
//                     greedily, the answer decoded with the largest margin (summed per answer)
//   eager             entropy-gated branching (TRACE mode): greedy, forking the top k tokens
//                     where entropy exceeds theta bits, up to `traces` traces
// The TRACE strategies are deterministic, and get the task's extraction as their answer pattern;
// options k, candidate_min_p, traces, aggregate=0|1, and for eager theta and depth.
// Plain sampling is the decision matrix's ADAPTIVE row with every adjustment coefficient zeroed
// and a single draw, so all strategies run through the same server path.
//
// A list is comma-separated; options follow the kind after colons, e.g.
//   greedy,sample:temperature=0.8,best_of_n:n=4,search:policy_file=cal.json:label=search-cal
#ifndef ARBOR_TOOLS_EVAL_STRATEGIES_H_
#define ARBOR_TOOLS_EVAL_STRATEGIES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arbor/v1/entropix.pb.h"

namespace arbor::tools::eval {

enum class StrategyKind {
  kGreedy,
  kSample,
  kBestOfN,
  kSelfConsistency,
  kCanonical,
  kSearch,
  kCotDecoding,
  kEager,
  kDeepConf,
};

struct Strategy {
  std::string label;  // Reported name: label=…, else the spec as written.
  StrategyKind kind = StrategyKind::kGreedy;
  int samples = 1;                 // Generations per answer (best_of_n, self_consistency).
  arbor::v1::PolicyConfig policy;  // Sent with every generation.
  // Deterministic strategies are run once per item; that answer stands for every seed.
  bool deterministic() const {
    return kind == StrategyKind::kGreedy || kind == StrategyKind::kCotDecoding ||
           kind == StrategyKind::kEager;
  }
};

// Parses a strategy list. INVALID_ARGUMENT naming the entry and option for unknown kinds or
// options, bad values, duplicate labels, or an unreadable policy_file.
absl::StatusOr<std::vector<Strategy>> ParseStrategies(const std::string& list);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_STRATEGIES_H_
