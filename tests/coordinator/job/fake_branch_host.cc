// The fake BranchHost of fake_branch_host.h: Fork, CommitBranch and the Run builder settings
// reproduce what the job's main path does (coordinator/job/main_path.cc) in plain test code.
#include "tests/coordinator/job/fake_branch_host.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "coordinator/job/branch_search.h"
#include "coordinator/job/fork.h"
#include "coordinator/job/stored_distribution.h"
#include "gtest/gtest.h"

namespace arbor::coordinator::testing {
namespace {

using arbor::v1::RunItem;
using arbor::v1::StepResult;

void AddTopK(const std::vector<TokenAlternative>& top_k, StepResult& step) {
  for (const TokenAlternative& t : top_k) {
    arbor::v1::TokenLogprob& out = *step.add_top_k();
    out.set_token_id(t.token_id);
    out.set_logprob(t.logprob);
  }
}

SearchTree MakeTree(const JobSpec& spec) {
  return SearchTree::Create(spec.prompt_token_ids, spec.vocab_size, kMainSequence).value();
}

}  // namespace

JobSpec FakeHostSpec(int32_t max_tokens) {
  JobSpec spec;
  spec.job_id = "fake-host";
  spec.prompt_token_ids = {1, 2, 3};
  spec.vocab_size = kHostVocab;
  spec.max_context = 512;
  spec.max_tokens = max_tokens;
  spec.seed = 20240611;
  spec.policy.insert.tokens = {60};
  spec.eos_token_ids = {kHostEos};
  return spec;
}

arbor::v1::Metrics StepMetrics(float entropy, float varentropy) {
  arbor::v1::Metrics metrics;
  metrics.set_entropy(entropy);
  metrics.set_varentropy(varentropy);
  return metrics;
}

StepResult TokenStep(int32_t position, int32_t token, float logprob,
                     const arbor::v1::Metrics& metrics, std::vector<TokenAlternative> top_k,
                     arbor::v1::Strategy strategy) {
  StepResult step;
  step.set_position(position);
  step.set_token_id(token);
  step.set_logprob(logprob);
  *step.mutable_metrics() = metrics;
  step.set_strategy(strategy);
  AddTopK(top_k, step);
  return step;
}

StepResult StructuralStep(int32_t position, arbor::v1::Strategy strategy,
                          std::vector<TokenAlternative> top_k, const arbor::v1::Metrics& metrics) {
  StepResult step = TokenStep(position, -1, 0.0f, metrics, std::move(top_k), strategy);
  step.set_temperature(1.0f);
  step.set_top_p(1.0f);
  step.set_top_k_param(0);
  step.set_min_p(0.0f);
  return step;
}

FakeBranchHost::FakeBranchHost(JobSpec spec, int32_t top_k)
    : spec_(std::move(spec)), tree_(MakeTree(spec_)), builder_(RunBuilder::ForJob(spec_, top_k)) {
  lengths_[kMainSequence] = static_cast<int32_t>(spec_.prompt_token_ids.size());
}

PolicyBudgets FakeBranchHost::Budgets() const {
  PolicyBudgets out = budgets;
  out.generated_before = tree_.GeneratedTokenCount();
  return out;
}

int32_t FakeBranchHost::Remaining() const { return spec_.max_tokens - tree_.GeneratedTokenCount(); }

bool FakeBranchHost::IsStopToken(int32_t token) const {
  const auto in = [token](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  return in(spec_.stop_token_ids) || (!spec_.ignore_eos && in(spec_.eos_token_ids));
}

std::string FakeBranchHost::Decode(absl::Span<const int32_t> tokens) const {
  std::string text;
  for (int32_t id : tokens) text.push_back(static_cast<char>('0' + id));
  return text;
}

absl::StatusOr<std::vector<Rollout>> FakeBranchHost::Fork(NodeId point,
                                                          const StepResult& structural_step,
                                                          uint32_t rng_branch,
                                                          const SequenceSource& base, int32_t depth,
                                                          int32_t max_len, int width) {
  std::vector<entropix::SampledToken> candidates;
  if (!scripted_.empty()) {
    for (const TokenAlternative& t : scripted_.front()) {
      candidates.push_back({t.token_id, t.logprob});
    }
    scripted_.pop_front();
  } else {
    const entropix::RngKey key{spec_.seed, static_cast<uint32_t>(structural_step.position()),
                               rng_branch, 0};
    absl::StatusOr<std::vector<entropix::SampledToken>> drawn =
        ChooseBranchCandidates(structural_step, spec_.policy, width, key);
    if (drawn.ok()) candidates = *std::move(drawn);
  }
  if (candidates.empty()) return std::vector<Rollout>{};
  ASSIGN_OR_RETURN(std::vector<Rollout> rollouts,
                   OpenFork(
                       tree_, spec_, {point, base, depth, max_len}, structural_step, candidates,
                       [this] { return NewSequenceId(); }, [this] { return NewBranchId(); }));
  Count(structural_step.strategy());
  std::vector<NodeId> nodes;
  for (const Rollout& rollout : rollouts) nodes.push_back(rollout.candidate);
  forks_.push_back(
      {point, structural_step.position(), rng_branch, base, depth, max_len, width, nodes});
  return rollouts;
}

bool FakeBranchHost::ApplySource(const RunItem& item) {
  int32_t length = 0;
  if (item.has_fork_from()) {
    auto parent = lengths_.find(item.fork_from());
    if (parent == lengths_.end() || item.fork_length() < 1 || item.fork_length() > parent->second) {
      ADD_FAILURE() << "item " << item.sequence_id() << " forks " << item.fork_from() << " at "
                    << item.fork_length() << ", which the worker does not hold";
      return false;
    }
    length = item.fork_length();
  } else if (item.continues()) {
    auto it = lengths_.find(item.sequence_id());
    if (it == lengths_.end() || (item.has_truncate_to() && item.truncate_to() > it->second)) {
      ADD_FAILURE() << "item " << item.sequence_id() << " continues a sequence not held so";
      return false;
    }
    length = item.has_truncate_to() ? item.truncate_to() : it->second;
  } else if (lengths_.contains(item.sequence_id())) {
    ADD_FAILURE() << "new item " << item.sequence_id() << " exists already";
    return false;
  }
  lengths_[item.sequence_id()] = length + item.append_size();
  return true;
}

void FakeBranchHost::SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids) {
  EXPECT_FALSE(in_flight_) << "a strategy sent a Run while its last one was unanswered";
  EXPECT_EQ(static_cast<int>(ids.size()), request.items_size());
  for (int i = 0; i < request.items_size(); ++i) {
    const RunItem& item = request.items(i);
    if (i < static_cast<int>(ids.size())) {
      EXPECT_EQ(ids[i], item.sequence_id());
    }
    ApplySource(item);
  }
  in_flight_ = true;
  runs_.push_back({std::move(request), std::move(ids)});
}

void FakeBranchHost::Release(std::vector<uint64_t> ids) {
  for (uint64_t id : ids) lengths_.erase(id);
  release_calls_.push_back(std::move(ids));
}

void FakeBranchHost::EmitResolved(const BranchResolution& resolution,
                                  const std::vector<float>& scores, const std::string& reason) {
  resolved_.push_back({resolution, scores, reason});
}

absl::StatusOr<std::vector<Rollout>> FakeBranchHost::OpenMainBranch(const StepResult& structural) {
  // ROLLOUT and BEAM open the fork width's candidates, each rolled out up to branch.max_len
  // tokens of those the job has left (TRACE plans its forks otherwise).
  return OpenMainBranch(
      structural, {spec_.policy.ForkWidth(), std::min(spec_.policy.branch.max_len, Remaining())});
}

absl::StatusOr<std::vector<Rollout>> FakeBranchHost::OpenMainBranch(const StepResult& structural,
                                                                    const ForkPlan& plan) {
  SequenceSource base;
  base.fork_from = kMainSequence;
  base.fork_length = structural.position();
  return Fork(tree_.tail(), structural, /*rng_branch=*/0, base, /*depth=*/1, plan.max_len,
              plan.width);
}

absl::StatusOr<NodeId> FakeBranchHost::CommitMainStep(const StepResult& step) {
  Count(step.strategy());
  ASSIGN_OR_RETURN(const NodeId id, tree_.Commit(TreeStep(step, kMainSequence)));
  ++lengths_[kMainSequence];
  return id;
}

BranchStrategy::Next FakeBranchHost::Send(BranchStrategy& strategy) {
  const size_t before = runs_.size();
  BranchStrategy::Next next = strategy.Send(*this);
  if (next.ok() && !next->has_value()) {
    EXPECT_EQ(runs_.size(), before + 1) << "Send neither sent a Run nor committed";
  }
  return next;
}

BranchStrategy::Next FakeBranchHost::Answer(BranchStrategy& strategy,
                                            const arbor::v1::RunResponse& response) {
  if (!in_flight_) {
    ADD_FAILURE() << "no Run to answer";
    return absl::FailedPreconditionError("fake branch host: no Run in flight");
  }
  in_flight_ = false;
  const arbor::v1::RunRequest& request = runs_.back().request;
  EXPECT_EQ(response.results_size(), request.items_size()) << "one result per item";
  for (int i = 0; i < std::min(response.results_size(), request.items_size()); ++i) {
    const arbor::v1::RunResult& result = response.results(i);
    EXPECT_EQ(result.sequence_id(), request.items(i).sequence_id()) << "result " << i;
    auto it = lengths_.find(result.sequence_id());
    if (it == lengths_.end()) continue;
    for (const StepResult& step : result.steps()) it->second += step.token_id() >= 0 ? 1 : 0;
  }
  return strategy.OnDone(*this, response);
}

absl::StatusOr<BranchResolution> FakeBranchHost::CommitBranch(const BranchStrategy& strategy,
                                                              const BranchCommit& commit) {
  ASSIGN_OR_RETURN(BranchResolution resolution,
                   tree_.ResolveBranch(strategy.point(), commit.winner_leaf, commit.scores));
  std::vector<uint64_t> released;
  for (uint64_t id : strategy.Sequences()) {
    if (id != commit.main_sequence) released.push_back(id);
  }
  if (commit.main_sequence != kMainSequence) released.push_back(kMainSequence);
  Release(std::move(released));
  EmitResolved(resolution, commit.scores, commit.reason);
  return resolution;
}

int32_t FakeBranchHost::Length(uint64_t sequence_id) const {
  auto it = lengths_.find(sequence_id);
  return it == lengths_.end() ? -1 : it->second;
}

arbor::v1::RunResult FakeBranchHost::Result(uint64_t sequence_id,
                                            const std::vector<std::pair<int32_t, float>>& tokens,
                                            arbor::v1::StopReason stop,
                                            const arbor::v1::Metrics& metrics) const {
  arbor::v1::RunResult result;
  result.set_sequence_id(sequence_id);
  int32_t position = Length(sequence_id);
  for (const auto& [token, logprob] : tokens) {
    *result.add_steps() = TokenStep(position++, token, logprob, metrics);
  }
  result.set_stop_reason(stop);
  result.set_length(position);
  return result;
}

std::vector<uint64_t> FakeBranchHost::released() const {
  std::vector<uint64_t> all;
  for (const auto& call : release_calls_) all.insert(all.end(), call.begin(), call.end());
  return all;
}

int FakeBranchHost::CountOf(arbor::v1::Strategy strategy) const {
  return static_cast<int>(std::count(counts_.begin(), counts_.end(), strategy));
}

}  // namespace arbor::coordinator::testing
