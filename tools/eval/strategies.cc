#include "tools/eval/strategies.h"

#include <functional>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "entropix/policy_config.h"
#include "policy/policy_file.h"
#include "policy/policy_presets.h"

namespace arbor::tools::eval {
namespace {

using arbor::v1::PolicyConfig;

const std::map<std::string, StrategyKind>& Kinds() {
  static const auto* kinds =
      new std::map<std::string, StrategyKind>{{"greedy", StrategyKind::kGreedy},
                                              {"sample", StrategyKind::kSample},
                                              {"best_of_n", StrategyKind::kBestOfN},
                                              {"self_consistency", StrategyKind::kSelfConsistency},
                                              {"canonical", StrategyKind::kCanonical},
                                              {"search", StrategyKind::kSearch},
                                              {"cot_decoding", StrategyKind::kCotDecoding},
                                              {"eager", StrategyKind::kEager},
                                              {"deepconf", StrategyKind::kDeepConf}};
  return *kinds;
}

PolicyConfig BasePolicy(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kGreedy:
      return policy::GreedyPolicy();
    case StrategyKind::kSample:
    case StrategyKind::kBestOfN:
    case StrategyKind::kSelfConsistency:
      return policy::PlainSamplingPolicy();
    case StrategyKind::kCanonical: {
      PolicyConfig p;
      p.set_mode(arbor::v1::POLICY_MODE_CANONICAL);
      return p;
    }
    case StrategyKind::kSearch: {
      PolicyConfig p;
      p.set_mode(arbor::v1::POLICY_MODE_SEARCH);
      return p;
    }
    case StrategyKind::kCotDecoding:
      return policy::CotDecodingPolicy();
    case StrategyKind::kEager:
      return policy::EagerPolicy();
    case StrategyKind::kDeepConf:
      return policy::DeepConfPolicy();
  }
  return {};
}

bool Sampling(StrategyKind kind) {
  return kind == StrategyKind::kSample || kind == StrategyKind::kBestOfN ||
         kind == StrategyKind::kSelfConsistency;
}
bool Many(StrategyKind kind) {
  return kind == StrategyKind::kBestOfN || kind == StrategyKind::kSelfConsistency;
}
bool Tree(StrategyKind kind) {
  return kind == StrategyKind::kCanonical || kind == StrategyKind::kSearch;
}
bool SamplingOrTree(StrategyKind kind) { return Sampling(kind) || Tree(kind); }
bool Trace(StrategyKind kind) {
  return kind == StrategyKind::kCotDecoding || kind == StrategyKind::kEager ||
         kind == StrategyKind::kDeepConf;
}
bool Eager(StrategyKind kind) { return kind == StrategyKind::kEager; }
bool DeepConf(StrategyKind kind) { return kind == StrategyKind::kDeepConf; }
bool Search(StrategyKind kind) { return kind == StrategyKind::kSearch; }

// A numeric strategy option: the kinds it applies to, its range when it is an integer, and the
// field it sets. A key may appear twice for different kinds (temperature); the first that
// applies is taken.
struct NumericOption {
  const char* key;
  bool (*applies)(StrategyKind);
  bool integer;
  int lo, hi;
  void (*set)(Strategy&, double);
};

const std::vector<NumericOption>& NumericOptions() {
  using S = Strategy;
  static const auto* options = new std::vector<NumericOption>{
      {"n", Many, true, 1, 64, [](S& s, double v) { s.samples = static_cast<int>(v); }},
      {"temperature", SamplingOrTree, false, 0, 0,
       [](S& s, double v) { s.policy.mutable_sampling()->set_temperature(v); }},
      {"min_p", SamplingOrTree, false, 0, 0,
       [](S& s, double v) { s.policy.mutable_sampling()->set_min_p(v); }},
      {"top_p", SamplingOrTree, false, 0, 0,
       [](S& s, double v) { s.policy.mutable_sampling()->set_top_p(v); }},
      {"top_k", SamplingOrTree, true, 1, 1024,
       [](S& s, double v) { s.policy.mutable_sampling()->set_top_k(static_cast<int>(v)); }},
      {"k", Trace, true, 1, 64,
       [](S& s, double v) {
         s.policy.mutable_trace()->set_width(static_cast<int>(v));
         // DeepConf's traces all start at the one fork: room for every one of them.
         if (s.kind == StrategyKind::kDeepConf) {
           s.policy.mutable_trace()->set_max_traces(static_cast<int>(v));
         }
       }},
      {"candidate_min_p", Trace, false, 0, 0,
       [](S& s, double v) { s.policy.mutable_trace()->set_candidate_min_p(v); }},
      {"traces", Trace, true, 1, 256,
       [](S& s, double v) { s.policy.mutable_trace()->set_max_traces(static_cast<int>(v)); }},
      {"budget", Trace, true, 0, entropix::kMaxTraceTokenBudget,
       [](S& s, double v) { s.policy.mutable_trace()->set_token_budget(static_cast<int>(v)); }},
      {"aggregate", Trace, true, 0, 1,
       [](S& s, double v) { s.policy.mutable_trace()->set_aggregate(v == 1); }},
      {"theta", Eager, false, 0, 0,
       [](S& s, double v) { s.policy.mutable_trace()->set_fork_entropy(v); }},
      {"depth", Eager, true, 1, 8,
       [](S& s, double v) { s.policy.mutable_trace()->set_max_depth(static_cast<int>(v)); }},
      {"temperature", DeepConf, false, 0, 0,
       [](S& s, double v) { s.policy.mutable_trace()->set_temperature(v); }},
      {"warmup", DeepConf, true, 0, 256,
       [](S& s, double v) { s.policy.mutable_trace()->set_warmup_traces(static_cast<int>(v)); }},
      {"keep", DeepConf, false, 0, 0,
       [](S& s, double v) { s.policy.mutable_trace()->set_keep_fraction(v); }},
      {"window", DeepConf, true, 1, 4096,
       [](S& s, double v) {
         s.policy.mutable_trace()->set_confidence_window(static_cast<int>(v));
       }},
      {"width", Search, true, 2, 64,
       [](S& s, double v) { s.policy.mutable_branch()->set_width(static_cast<int>(v)); }},
      {"max_len", Search, true, 1, 1024,
       [](S& s, double v) { s.policy.mutable_branch()->set_max_len(static_cast<int>(v)); }},
  };
  return *options;
}

// `value` as `option` reads it: a number, or an integer in its range.
absl::StatusOr<double> ParseOptionValue(const NumericOption& option, const std::string& value,
                                        const std::string& at) {
  if (option.integer) {
    int i = 0;
    if (!absl::SimpleAtoi(value, &i) || i < option.lo || i > option.hi) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": '", value, "' is not an integer in [",
                                                     option.lo, ", ", option.hi, "]"));
    }
    return i;
  }
  float f = 0;
  if (!absl::SimpleAtof(value, &f)) {
    return absl::InvalidArgumentError(absl::StrCat(at, ": '", value, "' is not a number"));
  }
  return f;
}

absl::Status ApplyOption(const std::string& entry, const std::string& key, const std::string& value,
                         Strategy& strategy) {
  const std::string at = absl::StrCat("--strategies: ", entry, ": ", key);
  if (key == "label") {
    if (value.empty()) return absl::InvalidArgumentError(at + ": empty");
    strategy.label = value;
    return absl::OkStatus();
  }
  if (key == "policy_file" && (Tree(strategy.kind) || Trace(strategy.kind))) {
    ASSIGN_OR_RETURN(PolicyConfig file, policy::ReadPolicyFile(value));
    const arbor::v1::PolicyMode mode = strategy.policy.mode();
    strategy.policy.MergeFrom(file);
    strategy.policy.set_mode(mode);  // The strategy's kind decides the mode.
    return absl::OkStatus();
  }
  for (const NumericOption& option : NumericOptions()) {
    if (key != option.key || !option.applies(strategy.kind)) continue;
    ASSIGN_OR_RETURN(const double v, ParseOptionValue(option, value, at));
    option.set(strategy, v);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(at, ": not an option of this strategy (see `arbor eval --help`)"));
}

absl::StatusOr<Strategy> ParseStrategy(const std::string& entry) {
  std::vector<std::string> parts = absl::StrSplit(entry, ':');
  auto kind = Kinds().find(parts[0]);
  if (kind == Kinds().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--strategies: '", parts[0],
                     "' is not greedy, sample, best_of_n, self_consistency, canonical, search, "
                     "cot_decoding, eager or deepconf"));
  }
  Strategy strategy;
  strategy.label = entry;
  strategy.kind = kind->second;
  strategy.policy = BasePolicy(strategy.kind);
  if (strategy.kind == StrategyKind::kBestOfN) strategy.samples = 4;
  if (strategy.kind == StrategyKind::kSelfConsistency) strategy.samples = 5;
  for (size_t p = 1; p < parts.size(); ++p) {
    std::vector<std::string> key_value = absl::StrSplit(parts[p], absl::MaxSplits('=', 1));
    if (key_value.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("--strategies: ", entry, ": '", parts[p], "' is not key=value"));
    }
    RETURN_IF_ERROR(ApplyOption(entry, key_value[0], key_value[1], strategy));
  }
  return strategy;
}

}  // namespace

absl::StatusOr<std::vector<Strategy>> ParseStrategies(const std::string& list) {
  std::vector<Strategy> strategies;
  absl::flat_hash_set<std::string> labels;
  for (absl::string_view piece : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    const std::string entry(piece);
    ASSIGN_OR_RETURN(Strategy strategy, ParseStrategy(entry));
    if (!labels.insert(strategy.label).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--strategies: '", strategy.label, "' appears twice (give one a label=NAME option)"));
    }
    strategies.push_back(std::move(strategy));
  }
  if (strategies.empty()) return absl::InvalidArgumentError("--strategies: empty");
  return strategies;
}

}  // namespace arbor::tools::eval
