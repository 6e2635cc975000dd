#include "coordinator/job/job_output.h"

#include <algorithm>
#include <utility>

#include "coordinator/tree/tree_export.h"

namespace arbor::coordinator {

JobOutput::JobOutput(const JobSpec& spec, Decode decode, base::Clock* clock, Emit emit)
    : spec_(spec),
      decode_(std::move(decode)),
      clock_(clock),
      emit_(std::move(emit)),
      created_(clock->Now()),
      text_(decode_, spec.stop_strings, spec.constraint),
      reasoning_(spec.reasoning, decode_,
                 [&spec](int32_t token) { return spec.IsStopToken(token); },
                 [this](arbor::v1::ReasoningEvent reasoning) {
        arbor::v1::GenerateEvent event;
        *event.mutable_reasoning() = std::move(reasoning);
        Send(std::move(event));
      }) {}

void JobOutput::Send(arbor::v1::GenerateEvent event) {
  event.set_job_id(spec_.job_id);
  event.set_time_us(SinceCreated());
  emit_(std::move(event));
}

bool JobOutput::SendToken(const SearchTree& tree, NodeId id, bool final) {
  if (timings_.first_token_us() == 0) timings_.set_first_token_us(SinceCreated());
  const Node& node = tree.node(id);
  arbor::v1::GenerateEvent event;
  arbor::v1::TokenEvent& token = *event.mutable_token();
  token.set_node_id(id);
  token.set_token_id(node.token_id);
  token.set_strategy(node.strategy);
  *token.mutable_metrics() = node.metrics;
  token.set_logprob(node.logprob);
  token.set_position(node.position);
  token.set_final(final);
  if (spec_.top_logprobs > 0) AddTokenDetail(tree, node, token);
  const bool stopped = PushText(tree, id, token.mutable_text());
  Send(std::move(event));  // Carries the text cut before a stop string; finished follows it.
  return stopped;
}

void JobOutput::AddTokenDetail(const SearchTree& tree, const Node& node,
                               arbor::v1::TokenEvent& token) const {
  token.set_token_text(SanitizeUtf8(decode_({node.token_id})));
  const auto alternatives = tree.TopLogprobs(node.id);
  const size_t n = std::min<size_t>(alternatives.size(), spec_.top_logprobs);
  for (size_t i = 0; i < n; ++i) {
    arbor::v1::TokenLogprob& out = *token.add_top_logprobs();
    out.set_token_id(alternatives[i].token_id);
    out.set_logprob(alternatives[i].logprob);
    out.set_text(SanitizeUtf8(decode_({alternatives[i].token_id})));
  }
}

bool JobOutput::PushText(const SearchTree& tree, NodeId id, std::string* piece) {
  const int32_t token = tree.node(id).token_id;
  // A stop token ends the answer without being part of it (its id stays in the tree and the
  // token ids): only what was held back is released with it.
  if (spec_.IsStopToken(token)) {
    piece->append(text_.Finish().text);
    return false;
  }
  // The job ends on this token when nothing can follow it: release what was held back.
  const bool last =
      tree.GeneratedTokenCount() >= spec_.max_tokens || tree.NextPosition() >= spec_.max_context;
  StreamedText::Piece pushed = text_.Push(token, last);
  piece->append(pushed.text);
  return pushed.stopped;
}

void JobOutput::SendResolved(const BranchResolution& resolution, const std::vector<float>& scores,
                             const std::string& reason) {
  arbor::v1::GenerateEvent event;
  arbor::v1::BranchResolved& resolved = *event.mutable_branch_resolved();
  resolved.set_winner_node_id(resolution.winner_candidate);
  resolved.mutable_candidate_node_ids()->Add(resolution.candidates.begin(),
                                             resolution.candidates.end());
  resolved.mutable_scores()->Add(scores.begin(), scores.end());
  resolved.mutable_pruned_node_ids()->Add(resolution.pruned.pruned_nodes.begin(),
                                          resolution.pruned.pruned_nodes.end());
  resolved.set_committed_tokens(static_cast<int32_t>(resolution.committed_nodes.size()));
  resolved.set_reason(reason);
  Send(std::move(event));
}

void JobOutput::SendFinished(arbor::v1::FinishReason reason, const std::string& error,
                             const SearchTree& tree) {
  timings_.set_total_us(SinceCreated());
  arbor::v1::GenerateEvent event;
  arbor::v1::FinishedEvent& finished = *event.mutable_finished();
  finished.set_reason(reason);
  finished.set_error(error);
  *finished.mutable_usage() = Usage(tree);
  *finished.mutable_timings() = timings_;
  *finished.mutable_strategies() = counts_;
  Send(std::move(event));
}

void JobOutput::Count(arbor::v1::Strategy strategy) {
  arbor::v1::StrategyCounts& c = counts_;
  switch (strategy) {
    case arbor::v1::STRATEGY_ARGMAX:
      c.set_argmax(c.argmax() + 1);
      break;
    case arbor::v1::STRATEGY_ADAPTIVE:
      c.set_adaptive(c.adaptive() + 1);
      break;
    case arbor::v1::STRATEGY_BRANCH:
      c.set_branch(c.branch() + 1);
      break;
    case arbor::v1::STRATEGY_INSERT:
      c.set_insert(c.insert() + 1);
      break;
    case arbor::v1::STRATEGY_BACKSPACE:
      c.set_backspace(c.backspace() + 1);
      break;
    case arbor::v1::STRATEGY_HOT_SAMPLE:
      c.set_hot_sample(c.hot_sample() + 1);
      break;
    case arbor::v1::STRATEGY_RESAMPLE:
      c.set_resample(c.resample() + 1);
      break;
    case arbor::v1::STRATEGY_BRANCH_SAMPLE:
      c.set_branch_sample(c.branch_sample() + 1);
      break;
    default:
      break;
  }
}

void JobOutput::RunSent() {
  if (timings_.queued_us() == 0) timings_.set_queued_us(SinceCreated());
}

void JobOutput::RunDone(absl::Duration worker_time) {
  timings_.set_worker_us(timings_.worker_us() + absl::ToInt64Microseconds(worker_time));
}

arbor::v1::Usage JobOutput::Usage(const SearchTree& tree) const {
  arbor::v1::Usage usage;
  usage.set_prompt_tokens(static_cast<int32_t>(spec_.prompt_token_ids.size()));
  usage.set_generated_tokens(tree.GeneratedTokenCount());
  usage.set_explored_tokens(tree.ExploredTokenCount());
  usage.set_cached_prompt_tokens(cached_prompt_tokens_);
  return usage;
}

int64_t JobOutput::SinceCreated() const {
  return absl::ToInt64Microseconds(clock_->Now() - created_);
}

}  // namespace arbor::coordinator
