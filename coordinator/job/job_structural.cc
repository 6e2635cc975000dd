// The structural decisions a main-path step stops on, applied by the job: INSERT (append the
// thinking tokens), BACKSPACE (remove the last generated token, ban it, re-draw its position
// from its stored distribution) and BRANCH (fork the candidates and hand them to the policy's
// branch strategy, branch_strategy.h). Part of class Job (job.h).
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "coordinator/job/backspace.h"
#include "coordinator/job/fork.h"
#include "coordinator/job/job.h"
#include "coordinator/job/stored_distribution.h"

namespace arbor::coordinator {
namespace {

using arbor::v1::StepResult;

// Logprob of a token the coordinator appends without drawing it (INSERT): from the structural
// step's top-K when present, else the K-th logprob, an upper bound of the true value.
float LogprobOf(const StepResult& step, int32_t token) {
  float lowest = 0.0f;
  for (const arbor::v1::TokenLogprob& t : step.top_k()) {
    if (t.token_id() == token) return t.logprob();
    lowest = std::min(lowest, t.logprob());
  }
  return lowest;
}

}  // namespace

void Job::ApplyStructural(const StepResult& step) {
  if (step.position() != tree_.NextPosition()) {
    return Fail(absl::InternalError("structural step off the committed path"));
  }
  switch (step.strategy()) {
    case arbor::v1::STRATEGY_INSERT:
      return ApplyInsert(step);
    case arbor::v1::STRATEGY_BACKSPACE:
      return ApplyBackspace(step);
    case arbor::v1::STRATEGY_BRANCH:
      return OpenBranch(step);
    default:
      return Fail(absl::InternalError(absl::StrCat("structural stop with strategy ",
                                                   arbor::v1::Strategy_Name(step.strategy()))));
  }
}

void Job::ApplyInsert(const StepResult& step) {
  const std::vector<int32_t>& tokens = spec_.policy.insert.tokens;
  const size_t n = std::min<size_t>(tokens.size(), std::max(0, host_.Remaining()));
  if (n == 0) return Finish(arbor::v1::FINISH_REASON_MAX_TOKENS);
  output_.Count(step.strategy());
  arbor::v1::GenerateEvent event;
  bool stopped = false;
  for (size_t i = 0; i < n; ++i) {
    Step tree_step = TreeStep(step, main_.id());
    tree_step.token_id = tokens[i];
    tree_step.logprob = LogprobOf(step, tokens[i]);
    if (i > 0) tree_step.top_logprobs.clear();  // Only the first was decided on this step.
    absl::StatusOr<NodeId> id = tree_.Insert(tree_step);
    if (!id.ok()) return Fail(id.status());
    event.mutable_insert()->add_node_ids(*id);
    event.mutable_insert()->add_token_ids(tokens[i]);
    event.mutable_insert()->add_logprobs(tree_step.logprob);
    main_.Append(tokens[i]);
    stopped = stopped || output_.PushText(tree_, *id, event.mutable_insert()->mutable_text());
  }
  ++used_.inserts_used;
  used_.last_insert_position = tree_.node(tree_.tail()).position;
  output_.Send(std::move(event));
  if (stopped) return Finish(arbor::v1::FINISH_REASON_STOP_STRING);
  Continue();
}

void Job::ApplyBackspace(const StepResult& step) {
  const NodeId tail = tree_.tail();
  const Node removed = tree_.node(tail);
  if (removed.status != arbor::v1::NODE_STATUS_COMMITTED || tree_.WasBackspaced(removed.position)) {
    return Fallback();
  }
  const entropix::RngKey key{spec_.seed, static_cast<uint32_t>(removed.position), 0, 0};
  absl::StatusOr<entropix::SampledToken> redraw =
      RedrawBackspaced(tree_.TopLogprobs(tail), removed.token_id, step, key);
  if (!redraw.ok()) return Fallback();
  const std::vector<TokenAlternative> stored(tree_.TopLogprobs(tail).begin(),
                                             tree_.TopLogprobs(tail).end());
  if (!tree_.Backspace().ok()) return Fallback();
  output_.Count(step.strategy());
  ++used_.backspaces_used;
  arbor::v1::TokenBan& ban = used_.bans.emplace_back();
  ban.set_position(removed.position);
  ban.set_token_id(removed.token_id);
  arbor::v1::GenerateEvent event;
  event.mutable_backspace()->set_removed_node_id(tail);
  event.mutable_backspace()->set_removed_token_id(removed.token_id);
  event.mutable_backspace()->set_position(removed.position);
  output_.Send(std::move(event));
  output_.PopText();  // The client drops the piece streamed with the removed token.

  Step redrawn;
  redrawn.token_id = redraw->id;
  redrawn.logprob = std::min(redraw->logprob, 0.0f);
  redrawn.metrics = removed.metrics;  // Drawn from the removed token's distribution.
  redrawn.strategy = arbor::v1::STRATEGY_RESAMPLE;
  redrawn.sequence_id = main_.id();
  redrawn.top_logprobs = stored;
  absl::StatusOr<NodeId> id = tree_.Commit(redrawn);
  if (!id.ok()) return Fail(id.status());
  main_.Redraw(removed.position, redraw->id);
  if (!EmitCommitted(*id)) return;
  if (IsStopToken(redraw->id)) return Finish(arbor::v1::FINISH_REASON_STOP_TOKEN);
  Continue();
}

void Job::OpenBranch(const StepResult& step) {
  SequenceSource base;
  if (main_.live()) {
    base.fork_from = main_.id();
    base.fork_length = step.position();
  } else {
    base.is_new = true;  // After a re-home: prefill the committed path.
    base.append = tree_.SequenceTokenIds();
  }
  const ForkPlan plan = planner_->Plan(host_.Remaining());
  if (plan.width < 1) return Fallback();
  absl::StatusOr<std::vector<Rollout>> rollouts =
      host_.Fork(tree_.tail(), step, /*rng_branch=*/0, base,
                 /*depth=*/1, plan.max_len, plan.width);
  if (!rollouts.ok()) return Fail(rollouts.status());
  if (rollouts->empty()) return Fallback();
  branch_ = planner_->Open(tree_.tail(), *std::move(rollouts));
  Continue();
}

}  // namespace arbor::coordinator
