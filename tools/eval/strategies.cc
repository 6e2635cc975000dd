#include "tools/eval/strategies.h"

#include <functional>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "policy/policy_file.h"
#include "policy/policy_presets.h"

namespace arbor::eval {
namespace {

using arbor::v1::PolicyConfig;

const std::map<std::string, StrategyKind>& Kinds() {
  static const auto* kinds = new std::map<std::string, StrategyKind>{
      {"greedy", StrategyKind::kGreedy},       {"sample", StrategyKind::kSample},
      {"best_of_n", StrategyKind::kBestOfN},   {"self_consistency", StrategyKind::kSelfConsistency},
      {"canonical", StrategyKind::kCanonical}, {"search", StrategyKind::kSearch},
      {"cot_decoding", StrategyKind::kCotDecoding}, {"eager", StrategyKind::kEager},
      {"deepconf", StrategyKind::kDeepConf}};
  return *kinds;
}

PolicyConfig BasePolicy(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kGreedy:
      return rpc::GreedyPolicy();
    case StrategyKind::kSample:
    case StrategyKind::kBestOfN:
    case StrategyKind::kSelfConsistency:
      return rpc::PlainSamplingPolicy();
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
      return rpc::CotDecodingPolicy();
    case StrategyKind::kEager:
      return rpc::EagerPolicy();
    case StrategyKind::kDeepConf:
      return rpc::DeepConfPolicy();
  }
  return {};
}

bool Sampling(StrategyKind kind) {
  return kind == StrategyKind::kSample || kind == StrategyKind::kBestOfN ||
         kind == StrategyKind::kSelfConsistency;
}

absl::Status ApplyOption(const std::string& entry, const std::string& key, const std::string& value,
                         Strategy& strategy) {
  const std::string at = absl::StrCat("--strategies: ", entry, ": ", key);
  auto number = [&](float& out) -> absl::Status {
    if (!absl::SimpleAtof(value, &out)) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": '", value, "' is not a number"));
    }
    return absl::OkStatus();
  };
  auto integer = [&](int& out, int lo, int hi) -> absl::Status {
    if (!absl::SimpleAtoi(value, &out) || out < lo || out > hi) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": '", value, "' is not an integer in [", lo, ", ", hi, "]"));
    }
    return absl::OkStatus();
  };
  const bool sampling = Sampling(strategy.kind);
  const bool tree =
      strategy.kind == StrategyKind::kCanonical || strategy.kind == StrategyKind::kSearch;
  const bool deepconf = strategy.kind == StrategyKind::kDeepConf;
  const bool trace = strategy.kind == StrategyKind::kCotDecoding ||
                     strategy.kind == StrategyKind::kEager || deepconf;
  const bool many =
      strategy.kind == StrategyKind::kBestOfN || strategy.kind == StrategyKind::kSelfConsistency;
  arbor::v1::SamplingParams* s = strategy.policy.mutable_sampling();
  float f = 0;
  int i = 0;
  if (key == "label") {
    if (value.empty()) return absl::InvalidArgumentError(at + ": empty");
    strategy.label = value;
  } else if (key == "n" && many) {
    RETURN_IF_ERROR(integer(strategy.samples, 1, 64));
  } else if (key == "temperature" && (sampling || tree)) {
    RETURN_IF_ERROR(number(f));
    s->set_temperature(f);
  } else if (key == "min_p" && (sampling || tree)) {
    RETURN_IF_ERROR(number(f));
    s->set_min_p(f);
  } else if (key == "top_p" && (sampling || tree)) {
    RETURN_IF_ERROR(number(f));
    s->set_top_p(f);
  } else if (key == "top_k" && (sampling || tree)) {
    RETURN_IF_ERROR(integer(i, 1, 1024));
    s->set_top_k(i);
  } else if (key == "policy_file" && (tree || trace)) {
    ASSIGN_OR_RETURN(PolicyConfig file, rpc::ReadPolicyFile(value));
    const arbor::v1::PolicyMode mode = strategy.policy.mode();
    strategy.policy.MergeFrom(file);
    strategy.policy.set_mode(mode);  // The strategy's kind decides the mode.
  } else if (key == "k" && trace) {
    RETURN_IF_ERROR(integer(i, 1, 64));
    strategy.policy.mutable_trace()->set_width(i);
    // DeepConf's traces all start at the one fork: room for every one of them.
    if (deepconf) strategy.policy.mutable_trace()->set_max_traces(i);
  } else if (key == "candidate_min_p" && trace) {
    RETURN_IF_ERROR(number(f));
    strategy.policy.mutable_trace()->set_candidate_min_p(f);
  } else if (key == "traces" && trace) {
    RETURN_IF_ERROR(integer(i, 1, 256));
    strategy.policy.mutable_trace()->set_max_traces(i);
  } else if (key == "aggregate" && trace) {
    RETURN_IF_ERROR(integer(i, 0, 1));
    strategy.policy.mutable_trace()->set_aggregate(i == 1);
  } else if (key == "theta" && strategy.kind == StrategyKind::kEager) {
    RETURN_IF_ERROR(number(f));
    strategy.policy.mutable_trace()->set_fork_entropy(f);
  } else if (key == "depth" && strategy.kind == StrategyKind::kEager) {
    RETURN_IF_ERROR(integer(i, 1, 8));
    strategy.policy.mutable_trace()->set_max_depth(i);
  } else if (key == "temperature" && deepconf) {
    RETURN_IF_ERROR(number(f));
    strategy.policy.mutable_trace()->set_temperature(f);
  } else if (key == "warmup" && deepconf) {
    RETURN_IF_ERROR(integer(i, 0, 256));
    strategy.policy.mutable_trace()->set_warmup_traces(i);
  } else if (key == "keep" && deepconf) {
    RETURN_IF_ERROR(number(f));
    strategy.policy.mutable_trace()->set_keep_fraction(f);
  } else if (key == "window" && deepconf) {
    RETURN_IF_ERROR(integer(i, 1, 4096));
    strategy.policy.mutable_trace()->set_confidence_window(i);
  } else if (key == "width" && strategy.kind == StrategyKind::kSearch) {
    RETURN_IF_ERROR(integer(i, 2, 64));
    strategy.policy.mutable_branch()->set_width(i);
  } else if (key == "max_len" && strategy.kind == StrategyKind::kSearch) {
    RETURN_IF_ERROR(integer(i, 1, 1024));
    strategy.policy.mutable_branch()->set_max_len(i);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": not an option of this strategy (see `arbor eval --help`)"));
  }
  return absl::OkStatus();
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

}  // namespace arbor::eval
