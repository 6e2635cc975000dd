#include "worker/engine/item_run.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "entropix/candidates.h"
#include "entropix/decision.h"
#include "entropix/metrics.h"
#include "entropix/policy_step.h"
#include "policy/policy_convert.h"

namespace arbor::worker {
namespace {

// The `k` most likely tokens with their log-probabilities: the first k of the row's candidates,
// which the request made at least that many (item_.top_k() ≤ every request's candidates).
std::vector<entropix::TokenLogprob> TopK(const RowReduction& row, int k) {
  const entropix::CandidateRow& candidates = row.candidates;
  const size_t n = std::min(static_cast<size_t>(std::max(k, 0)), candidates.ids.size());
  std::vector<entropix::TokenLogprob> top;
  top.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    top.push_back({candidates.ids[i],
                   static_cast<float>(candidates.logits[i] - double{row.logits.logsumexp})});
  }
  return top;
}

void SetTopK(const std::vector<entropix::TokenLogprob>& top_k, v1::StepResult& step) {
  step.clear_top_k();
  for (const entropix::TokenLogprob& top : top_k) {
    v1::TokenLogprob* out = step.add_top_k();
    out->set_token_id(top.id);
    out->set_logprob(top.logprob);
  }
}

void FillSampling(const entropix::SamplingParams& params, v1::StepResult& step) {
  step.set_temperature(params.temperature);
  step.set_top_p(params.top_p);
  step.set_top_k_param(params.top_k);
  step.set_min_p(params.min_p);
}

}  // namespace

ItemRun::ItemRun(const v1::RunItem& item, entropix::PolicyConfig policy,
                 entropix::LogitProcessorConfig processors, const ItemLimits& limits,
                 std::shared_ptr<grammar::CompiledConstraint> constraint)
    : item_(item), policy_(std::move(policy)), processors_(std::move(processors)), limits_(limits) {
  if (constraint != nullptr) {
    constraint_.emplace(std::move(constraint));
    end_tokens_.assign(item.stop().stop_token_ids().begin(), item.stop().stop_token_ids().end());
    if (!item.stop().ignore_eos()) {
      end_tokens_.insert(end_tokens_.end(), limits.eos_token_ids.begin(),
                         limits.eos_token_ids.end());
    }
  }
  result_.set_sequence_id(item.sequence_id());
  context_.inserts_used = item.inserts_used();
  context_.backspaces_used = item.backspaces_used();
  context_.last_insert_position =
      item.has_last_insert_position() ? item.last_insert_position() : -1;
  context_.branch_depth = item.branch_depth();
  keep_previous_top_k_ = item.top_k() > 0 && !item.top_k_every_step() &&
                         item.stop_on_structural() &&
                         policy_.mode == entropix::PolicyMode::kSearch &&
                         item.backspaces_used() < policy_.backspace.max_per_job;
  if (item.stop_below_confidence() > 0.0f) {
    confidence_.emplace(item.confidence_window());
    for (float c : item.recent_confidences()) confidence_->Add(c);
  }
}

void ItemRun::Begin(int32_t length, int32_t last_token, bool last_sampled,
                    absl::FunctionRef<int32_t(int32_t)> token_at) {
  length_ = length;
  if (processors_.config().active()) {
    for (int32_t p = 0; p < length; ++p) processors_.Add(token_at(p), p);
  }
  if (constraint_) {
    for (int32_t p = std::max(item_.prompt_length(), 0); p < length; ++p) {
      if (!constraint_->Add(token_at(p))) {
        constraint_status_ = absl::FailedPreconditionError(absl::StrCat(
            "constraint: the output's token ", token_at(p), " at position ", p,
            " is outside the grammar (was the sequence extended without the constraint?)"));
        break;
      }
    }
  }
  first_generated_ = length - item_.generated_before();
  last_token_ = last_token;
  context_.previous_backspaceable =
      last_sampled && BannedAt(length - 1).empty();  // Once per position.
  // Prefill-only and scoring items (max_steps 0) end when the engine has run their tokens.
  if (item_.max_steps() > 0 && scores_left() == 0 && length_ >= limits_.max_context) {
    Finish(v1::STOP_REASON_CONTEXT);
  }
}

std::vector<int32_t> ItemRun::BannedAt(int32_t position) const {
  std::vector<int32_t> banned;
  for (const v1::TokenBan& ban : item_.bans()) {
    if (ban.position() == position) banned.push_back(ban.token_id());
  }
  return banned;
}

bool ItemRun::IsStopToken(int32_t token) const {
  const auto& extra = item_.stop().stop_token_ids();
  if (std::find(extra.begin(), extra.end(), token) != extra.end()) return true;
  if (item_.stop().ignore_eos()) return false;
  return std::find(limits_.eos_token_ids.begin(), limits_.eos_token_ids.end(), token) !=
         limits_.eos_token_ids.end();
}

bool ItemRun::CalmAfter(const entropix::Metrics& metrics) {
  const bool calm = metrics.entropy < policy_.branch.calm_entropy &&
                    metrics.varentropy < policy_.branch.calm_varentropy;
  calm_streak_ = calm ? calm_streak_ + 1 : 0;
  return item_.stop_when_calm() && calm_streak_ >= policy_.branch.calm_steps;
}

bool ItemRun::ConfidenceFell(const RowReduction& row) {
  if (!confidence_) return false;
  std::vector<float> logprobs;
  for (const entropix::TokenLogprob& top : TopK(row, entropix::kConfidenceTopK)) {
    logprobs.push_back(top.logprob);
  }
  confidence_->Add(entropix::TokenConfidence(logprobs));
  return confidence_->full() && confidence_->current() < item_.stop_below_confidence();
}

ReductionRequest ItemRun::DecodeRequest() {
  ReductionRequest request;
  request.adjustments = processors_.Adjustments();
  if (constraint_ && constraint_status_.ok()) {
    constraint_->Mask(end_tokens_, allowed_);
    allowed_count_ = 0;
    for (uint64_t word : allowed_) allowed_count_ += std::popcount(word);
    request.allowed = allowed_;
  }
  request.candidates =
      std::max(entropix::CandidatesNeeded(policy_, BannedAt(length_).size()), item_.top_k());
  if (confidence_) request.candidates = std::max(request.candidates, entropix::kConfidenceTopK);
  const std::vector<int32_t>& inserts = policy_.insert.tokens;
  if (policy_.mode == entropix::PolicyMode::kCanonical && !inserts.empty()) {
    request.probe_token = inserts.front();  // Its logprob is reported when CANONICAL inserts.
  }
  request.attention_mode = policy_.attention_mode;
  request.reference_len = policy_.reference_len;
  return request;
}

ReductionRequest ItemRun::ScoreRequest(int32_t token) const {
  ReductionRequest request;
  request.candidates = item_.top_k();
  request.probe_token = token;
  request.attention_mode = policy_.attention_mode;
  request.reference_len = policy_.reference_len;
  return request;
}

absl::StatusOr<v1::StepResult> ItemRun::ScoreStep(const RowReduction& row, int32_t position,
                                                  int32_t token) const {
  RETURN_IF_ERROR(row.status);
  const entropix::Metrics metrics = entropix::CombineMetrics(row.logits, row.attention);
  // What the policy would have done here, with the item's budgets: the decision a generation
  // reaching this position would take, which calibration and debugging want to see.
  entropix::DecisionContext context = context_;
  context.position = position;
  const entropix::Decision decision = entropix::Decide(metrics, policy_, context);

  v1::StepResult step;
  step.set_position(position);
  step.set_token_id(token);
  step.set_logprob(row.probe_logit - row.logits.logsumexp);
  step.set_rank(row.probe_rank);
  *step.mutable_metrics() = policy::MetricsToProto(metrics);
  step.set_strategy(policy::StrategyToProto(decision.strategy));
  FillSampling(decision.sampling, step);
  SetTopK(TopK(row, item_.top_k()), step);
  return step;
}

void ItemRun::AddScored(v1::StepResult step) {
  *result_.add_steps() = std::move(step);
  ++scored_;
}

void ItemRun::Finish(v1::StopReason reason) {
  done_ = true;
  result_.set_stop_reason(reason);
}

void ItemRun::Stop(v1::StopReason reason) {
  if (!done_) Finish(reason);
}

absl::StatusOr<std::vector<int32_t>> ItemRun::OnDistribution(const RowReduction& row) {
  RETURN_IF_ERROR(row.status);
  RETURN_IF_ERROR(constraint_status_);
  const entropix::LogitMetrics& logit_metrics = row.logits;
  context_.position = length_;
  context_.generated = length_ - first_generated_;
  const std::vector<int32_t>& inserts = policy_.insert.tokens;
  context_.previous_is_insert_token = !inserts.empty() && last_token_ == inserts.back();
  const std::vector<int32_t> banned = BannedAt(length_);
  entropix::StepOptions options;
  options.banned = banned;
  // CANONICAL emits the thinking token itself, so it needs to see INSERT decisions too.
  const bool canonical = policy_.mode == entropix::PolicyMode::kCanonical;
  options.stop_on_structural = item_.stop_on_structural() || canonical;
  const entropix::RngKey key{item_.seed(), static_cast<uint32_t>(length_), item_.branch_id(), 0};
  // The policy samples from the row's best candidates (exactly what the whole row would give).
  ASSIGN_OR_RETURN(entropix::StepOutcome outcome,
                   entropix::PolicyStep(row.candidates.View(logit_metrics.logsumexp), logit_metrics,
                                        row.attention, policy_, context_, key, options));
  ++steps_done_;

  v1::StepResult& step = *result_.add_steps();
  step.set_position(length_);
  *step.mutable_metrics() = policy::MetricsToProto(outcome.metrics);
  step.set_strategy(policy::StrategyToProto(outcome.decision.strategy));
  FillSampling(outcome.decision.sampling, step);
  if (constraint_) step.set_allowed_tokens(allowed_count_);
  std::vector<int32_t> appended;
  if (outcome.token) {
    step.set_token_id(outcome.token->id);
    step.set_logprob(outcome.token->logprob);
    appended.push_back(outcome.token->id);
  } else if (canonical && outcome.decision.strategy == entropix::Strategy::kInsert) {
    // CANONICAL's thinking token(s): one step each, so every appended token is reported.
    appended = outcome.decision.insert_tokens;
    ++context_.inserts_used;
    context_.last_insert_position = length_ + static_cast<int32_t>(appended.size()) - 1;
    step.set_token_id(appended.front());
    step.set_logprob(row.probe_logit - logit_metrics.logsumexp);  // The probe: inserts.front().
    for (size_t i = 1; i < appended.size(); ++i) {
      v1::StepResult& next = *result_.add_steps();
      next = step;
      next.set_position(length_ + static_cast<int32_t>(i));
      next.set_token_id(appended[i]);
      next.set_logprob(0.0f);  // Forced continuation of the thinking text, not drawn.
    }
  } else {
    step.set_token_id(-1);  // Structural: the coordinator takes it from here.
    SetTopK(TopK(row, item_.top_k()), step);
    if (outcome.decision.strategy == entropix::Strategy::kBackspace) AttachPreviousTopK();
    Finish(v1::STOP_REASON_STRUCTURAL);
    return appended;
  }

  RETURN_IF_ERROR(FeedAppended(appended));
  length_ += static_cast<int32_t>(appended.size());
  last_token_ = appended.back();
  context_.previous_backspaceable = outcome.token.has_value();
  if (item_.top_k_every_step()) SetTopK(TopK(row, item_.top_k()), step);
  if (keep_previous_top_k_) previous_top_k_ = TopK(row, item_.top_k());
  FinishIfStopping(row, outcome.metrics, /*sampled=*/outcome.token.has_value());
  if (done_ && !item_.top_k_every_step()) {
    SetTopK(keep_previous_top_k_ ? previous_top_k_ : TopK(row, item_.top_k()), step);
  }
  return appended;
}

absl::Status ItemRun::FeedAppended(const std::vector<int32_t>& appended) {
  for (size_t i = 0; i < appended.size(); ++i) {
    processors_.Add(appended[i], length_ + static_cast<int32_t>(i));
    if (constraint_ && !IsStopToken(appended[i]) && !constraint_->Add(appended[i])) {
      return absl::InternalError(absl::StrCat("constraint: token ", appended[i], " at position ",
                                              length_ + i, " was taken outside its mask"));
    }
  }
  return absl::OkStatus();
}

void ItemRun::FinishIfStopping(const RowReduction& row, const entropix::Metrics& metrics,
                               bool sampled) {
  // Evaluated up front and in this order: ConfidenceFell and CalmAfter keep running state.
  const bool confidence_fell = sampled && ConfidenceFell(row);
  if (IsStopToken(last_token_)) {
    Finish(v1::STOP_REASON_STOP_TOKEN);
  } else if (confidence_fell) {
    Finish(v1::STOP_REASON_LOW_CONFIDENCE);
  } else if (CalmAfter(metrics)) {
    Finish(v1::STOP_REASON_CALM);
  } else if (length_ >= limits_.max_context) {
    Finish(v1::STOP_REASON_CONTEXT);
  } else if (steps_done_ >= item_.max_steps()) {
    Finish(v1::STOP_REASON_MAX_STEPS);
  }
}

void ItemRun::AttachPreviousTopK() {
  // The structural step was just added; the one before it, if this run produced it, drew the
  // token the coordinator will remove. A previous run's last step already carries its top-K.
  const int n = result_.steps_size();
  if (!keep_previous_top_k_ || n < 2) return;
  v1::StepResult& previous = *result_.mutable_steps(n - 2);
  if (previous.position() == length_ - 1 && previous.top_k_size() == 0) {
    SetTopK(previous_top_k_, previous);
  }
}

}  // namespace arbor::worker
