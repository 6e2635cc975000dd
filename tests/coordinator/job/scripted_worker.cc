// The scripted worker of scripted_worker.h: sequences kept as a worker keeps them, and each
// item decoded step by step with the real entropix PolicyStep over the scripted rows.
#include "tests/coordinator/job/scripted_worker.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "entropix/policy_step.h"
#include "entropix/trace_confidence.h"
#include "policy/policy_convert.h"

namespace arbor::coordinator::testing {
namespace {

constexpr float kNegligibleLogit = -40.0f;

ScriptedStep Row(float h, float v, std::vector<std::pair<int32_t, double>> distribution) {
  ScriptedStep step;
  step.entropy = h;
  step.varentropy = v;
  step.attention.attn_entropy = 1.0f;
  step.attention.agreement = 0.2f;
  step.attention.interaction_strength = 0.5f;
  step.distribution = std::move(distribution);
  return step;
}

}  // namespace

ScriptedStep Lelv(std::vector<std::pair<int32_t, double>> d) { return Row(0.05f, 0.05f, d); }
ScriptedStep Helv(std::vector<std::pair<int32_t, double>> d) { return Row(6.0f, 0.05f, d); }
ScriptedStep Lehv(std::vector<std::pair<int32_t, double>> d) { return Row(2.0f, 6.0f, d); }
ScriptedStep Hehv(std::vector<std::pair<int32_t, double>> d) { return Row(6.0f, 6.0f, d); }
ScriptedStep Adaptive(std::vector<std::pair<int32_t, double>> d) { return Row(1.0f, 1.0f, d); }

std::vector<std::pair<int32_t, double>> Spread(int32_t first, int n) {
  std::vector<std::pair<int32_t, double>> d;
  for (int i = 0; i < n; ++i) d.emplace_back(first + i, 1.0 / (i + 1));
  return d;
}

namespace {

// The steps a streaming worker would have sent before answering: not the last step, which ends
// the run, nor before a structural stop the token it may backspace.
arbor::v1::RunProgress ProgressOf(const arbor::v1::RunResponse& response) {
  arbor::v1::RunProgress progress;
  for (const arbor::v1::RunResult& result : response.results()) {
    arbor::v1::RunResult& streamed = *progress.add_results();
    streamed.set_sequence_id(result.sequence_id());
    const int held = result.stop_reason() == arbor::v1::STOP_REASON_STRUCTURAL ? 2 : 1;
    const int final_steps = result.steps_size() - held;
    for (int i = 0; i < final_steps; ++i) *streamed.add_steps() = result.steps(i);
  }
  return progress;
}

}  // namespace

void ScriptedWorker::Run(arbor::v1::RunRequest request, absl::Duration, RunCallback done,
                         ProgressCallback progress, std::shared_ptr<RunCancellation> cancel) {
  absl::StatusOr<arbor::v1::RunResponse> response = Execute(request);
  if (progress && response.ok()) progress(ProgressOf(*response));
  std::optional<uint64_t> key;
  {
    absl::MutexLock lock(&mu_);
    if (hold_) {
      key = next_held_++;
      held_[*key] = [done, response](absl::Status status) {
        status.ok() ? done(response) : done(std::move(status));
      };
    }
  }
  if (!key) return done(std::move(response));
  cancel->OnCancel([this, key = *key] {
    std::function<void(absl::Status)> answer;
    {
      absl::MutexLock lock(&mu_);
      auto it = held_.find(key);
      if (it == held_.end()) return;
      answer = std::move(it->second);
      held_.erase(it);
      ++cancelled_runs_;
    }
    answer(absl::CancelledError("scripted worker: run cancelled"));
  });
}

void ScriptedWorker::Release(std::vector<uint64_t> ids) {
  absl::MutexLock lock(&mu_);
  for (uint64_t id : ids) {
    released_.push_back(id);
    sequences_.erase(id);
  }
}

void ScriptedWorker::FailNext(absl::Status status, int n, int after) {
  absl::MutexLock lock(&mu_);
  fail_status_ = std::move(status);
  fail_count_ = n;
  fail_after_ = after;
}

void ScriptedWorker::SetMaxSequences(int n) {
  absl::MutexLock lock(&mu_);
  max_sequences_ = n;
}

void ScriptedWorker::LoseNextAnswers(absl::Status status, int n) {
  absl::MutexLock lock(&mu_);
  lose_status_ = std::move(status);
  lose_count_ = n;
}

void ScriptedWorker::Hold(bool hold) {
  absl::MutexLock lock(&mu_);
  hold_ = hold;
}

void ScriptedWorker::AnswerHeld(const absl::Status& status) {
  std::map<uint64_t, std::function<void(absl::Status)>> held;
  {
    absl::MutexLock lock(&mu_);
    held.swap(held_);
  }
  for (auto& [key, answer] : held) answer(status);
}

void ScriptedWorker::ReleaseHeld() { AnswerHeld(absl::OkStatus()); }

void ScriptedWorker::AbandonRuns() {
  AnswerHeld(absl::UnavailableError("scripted worker: run abandoned"));
}

int ScriptedWorker::cancelled_runs() const {
  absl::MutexLock lock(&mu_);
  return cancelled_runs_;
}

std::vector<arbor::v1::RunRequest> ScriptedWorker::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::vector<uint64_t> ScriptedWorker::released() const {
  absl::MutexLock lock(&mu_);
  return released_;
}

std::set<uint64_t> ScriptedWorker::live() const {
  absl::MutexLock lock(&mu_);
  std::set<uint64_t> live;
  for (const auto& [id, seq] : sequences_) live.insert(id);
  return live;
}

std::vector<int32_t> ScriptedWorker::tokens(uint64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = sequences_.find(id);
  return it == sequences_.end() ? std::vector<int32_t>{} : it->second.tokens;
}

absl::StatusOr<arbor::v1::RunResponse> ScriptedWorker::Execute(
    const arbor::v1::RunRequest& request) {
  absl::MutexLock lock(&mu_);
  requests_.push_back(request);
  if (fail_count_ > 0 && fail_after_-- <= 0) {
    --fail_count_;
    return fail_status_;
  }
  size_t created = 0;
  for (const arbor::v1::RunItem& item : request.items()) {
    created += sequences_.contains(item.sequence_id()) ? 0 : 1;
  }
  if (sequences_.size() + created > static_cast<size_t>(max_sequences_)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("scripted worker: KV cache holds ", max_sequences_, " sequences"));
  }
  arbor::v1::RunResponse response;
  for (const arbor::v1::RunItem& item : request.items()) {
    ASSIGN_OR_RETURN(*response.add_results(), ExecuteItem(item));
  }
  if (lose_count_ > 0) {
    --lose_count_;
    return lose_status_;
  }
  return response;
}

namespace {

// The next-token row a scripted step describes: logits over the vocabulary, and the metrics the
// worker computes from them with the top-K cut to the item's.
struct ScriptedRow {
  std::vector<float> logits;
  entropix::LogitMetrics metrics;
};

ScriptedRow RowOf(const ScriptedStep& scripted, int32_t top_k) {
  ScriptedRow row;
  // Tokens outside the distribution get a negligible but finite logit, as a real row would.
  row.logits.assign(kVocab, kNegligibleLogit);
  double total = 0.0;
  for (const auto& [id, p] : scripted.distribution) total += p;
  row.metrics.entropy = scripted.entropy;
  row.metrics.varentropy = scripted.varentropy;
  row.metrics.logsumexp = 0.0f;
  for (const auto& [id, p] : scripted.distribution) {
    row.logits[id] = static_cast<float>(std::log(p / total));
    row.metrics.top_k.push_back({id, row.logits[id]});
  }
  std::sort(row.metrics.top_k.begin(), row.metrics.top_k.end(),
            [](const auto& a, const auto& b) { return a.logprob > b.logprob; });
  if (static_cast<int>(row.metrics.top_k.size()) > top_k) row.metrics.top_k.resize(top_k);
  return row;
}

void FillTop(const std::vector<entropix::TokenLogprob>& top, arbor::v1::StepResult& into) {
  for (const auto& t : top) {
    arbor::v1::TokenLogprob* out = into.add_top_k();
    out->set_token_id(t.id);
    out->set_logprob(t.logprob);
  }
}

// One item's decode loop, as the engine runs it: the policy step at each position, what it
// appends, and why the item stops. It keeps what lasts across the item's steps (the decision
// context, the calm count, DeepConf's window, the previous step's top-K).
class ItemDecoder {
 public:
  ItemDecoder(const arbor::v1::RunItem& item, entropix::PolicyConfig policy,
              const std::vector<int32_t>& eos_ids, int32_t max_context, int32_t length)
      : item_(item),
        policy_(std::move(policy)),
        canonical_(policy_.mode == entropix::PolicyMode::kCanonical),
        eos_ids_(eos_ids),
        max_context_(max_context),
        // Position of the job's first generated token, as the worker derives it.
        first_generated_(length - item.generated_before()) {
    context_.inserts_used = item.inserts_used();
    context_.backspaces_used = item.backspaces_used();
    context_.last_insert_position =
        item.has_last_insert_position() ? item.last_insert_position() : -1;
    context_.branch_depth = item.branch_depth();
    // DeepConf's early stop, as the worker applies it (RunItem.stop_below_confidence).
    if (item.stop_below_confidence() > 0.0f) {
      confidence_.emplace(item.confidence_window());
      for (float c : item.recent_confidences()) confidence_->Add(c);
    }
  }

  // Decodes step `step_index` at the end of `tokens`, recording it in `result`; true when the
  // item stops there (the stop reason set).
  absl::StatusOr<bool> Step(const Script& script, int step_index, std::vector<int32_t>& tokens,
                            bool& last_sampled, arbor::v1::RunResult& result) {
    const int32_t position = static_cast<int32_t>(tokens.size());
    if (position >= max_context_) {
      result.set_stop_reason(arbor::v1::STOP_REASON_CONTEXT);
      return true;
    }
    const ScriptedStep scripted =
        script({position, tokens, item_.branch_id(), item_.branch_depth()});
    const ScriptedRow row = RowOf(scripted, item_.top_k());
    ASSIGN_OR_RETURN(const entropix::StepOutcome outcome,
                     Decide(position, tokens, last_sampled, scripted, row));
    arbor::v1::StepResult& step = *result.add_steps();
    step.set_position(position);
    *step.mutable_metrics() = policy::MetricsToProto(outcome.metrics);
    step.set_strategy(policy::StrategyToProto(outcome.decision.strategy));
    step.set_temperature(outcome.decision.sampling.temperature);
    step.set_top_p(outcome.decision.sampling.top_p);
    step.set_top_k_param(outcome.decision.sampling.top_k);
    step.set_min_p(outcome.decision.sampling.min_p);
    int32_t appended = -1;
    if (outcome.token) {
      appended = outcome.token->id;
      step.set_token_id(appended);
      step.set_logprob(outcome.token->logprob);
      last_sampled = true;
    } else if (canonical_ && outcome.decision.strategy == entropix::Strategy::kInsert) {
      appended = outcome.decision.insert_tokens.front();  // Tests use one thinking token.
      step.set_token_id(appended);
      step.set_logprob(row.logits[appended]);
      ++context_.inserts_used;
      context_.last_insert_position = position;
      last_sampled = false;
    } else {
      StopStructural(outcome, row, result);
      return true;
    }
    tokens.push_back(appended);
    const bool done = Ends(outcome, row, appended, step_index, result);
    if (item_.top_k_every_step() || done) FillTop(row.metrics.top_k, step);
    previous_top_ = row.metrics.top_k;
    return done;
  }

 private:
  std::vector<int32_t> BannedAt(int32_t position) const {
    std::vector<int32_t> banned;
    for (const arbor::v1::TokenBan& ban : item_.bans()) {
      if (ban.position() == position) banned.push_back(ban.token_id());
    }
    return banned;
  }

  bool IsStop(int32_t t) const {
    const auto& extra = item_.stop().stop_token_ids();
    if (std::find(extra.begin(), extra.end(), t) != extra.end()) return true;
    return !item_.stop().ignore_eos() &&
           std::find(eos_ids_.begin(), eos_ids_.end(), t) != eos_ids_.end();
  }

  // The real entropix PolicyStep at `position`, with the item's policy and budgets.
  absl::StatusOr<entropix::StepOutcome> Decide(int32_t position, const std::vector<int32_t>& tokens,
                                               bool last_sampled, const ScriptedStep& scripted,
                                               const ScriptedRow& row) {
    context_.position = position;
    context_.generated = position - first_generated_;
    context_.previous_backspaceable = last_sampled && BannedAt(position - 1).empty();
    context_.previous_is_insert_token =
        !policy_.insert.tokens.empty() && tokens.back() == policy_.insert.tokens.back();
    const std::vector<int32_t> banned = BannedAt(position);
    entropix::StepOptions options;
    options.banned = banned;
    options.stop_on_structural = item_.stop_on_structural() || canonical_;
    const entropix::RngKey key{item_.seed(), static_cast<uint32_t>(position), item_.branch_id(), 0};
    return entropix::PolicyStep(entropix::Candidates{row.logits, {}, row.metrics.logsumexp},
                                row.metrics, scripted.attention, policy_, context_, key, options);
  }

  // A structural decision: no token, the step's top-K, and the STRUCTURAL stop.
  void StopStructural(const entropix::StepOutcome& outcome, const ScriptedRow& row,
                      arbor::v1::RunResult& result) const {
    arbor::v1::StepResult& step = *result.mutable_steps(result.steps_size() - 1);
    step.set_token_id(-1);
    FillTop(row.metrics.top_k, step);
    // As the real worker does: the step before a BACKSPACE stop carries the top-K its token
    // will be re-drawn from.
    const int n = result.steps_size();
    if (outcome.decision.strategy == entropix::Strategy::kBackspace && n >= 2 &&
        result.steps(n - 2).top_k_size() == 0) {
      FillTop(previous_top_, *result.mutable_steps(n - 2));
    }
    result.set_stop_reason(arbor::v1::STOP_REASON_STRUCTURAL);
  }

  // After a step that appended `appended`: whether the item stops there, and why.
  bool Ends(const entropix::StepOutcome& outcome, const ScriptedRow& row, int32_t appended,
            int step_index, arbor::v1::RunResult& result) {
    const bool is_calm = outcome.metrics.entropy < policy_.branch.calm_entropy &&
                         outcome.metrics.varentropy < policy_.branch.calm_varentropy;
    calm_ = is_calm ? calm_ + 1 : 0;
    bool confidence_fell = false;
    if (confidence_ && outcome.token) {
      std::vector<float> logprobs;
      for (const auto& t : row.metrics.top_k) logprobs.push_back(t.logprob);
      confidence_->Add(entropix::TokenConfidence(logprobs));
      confidence_fell =
          confidence_->full() && confidence_->current() < item_.stop_below_confidence();
    }
    if (IsStop(appended)) {
      result.set_stop_reason(arbor::v1::STOP_REASON_STOP_TOKEN);
    } else if (confidence_fell) {
      result.set_stop_reason(arbor::v1::STOP_REASON_LOW_CONFIDENCE);
    } else if (item_.stop_when_calm() && calm_ >= policy_.branch.calm_steps) {
      result.set_stop_reason(arbor::v1::STOP_REASON_CALM);
    } else {
      return step_index + 1 == item_.max_steps();
    }
    return true;
  }

  const arbor::v1::RunItem& item_;
  const entropix::PolicyConfig policy_;
  const bool canonical_;
  const std::vector<int32_t>& eos_ids_;
  const int32_t max_context_;
  const int32_t first_generated_;
  entropix::DecisionContext context_;
  int calm_ = 0;
  std::optional<entropix::GroupConfidence> confidence_;
  std::vector<entropix::TokenLogprob> previous_top_;  // The last step's top-K.
};

}  // namespace

absl::StatusOr<arbor::v1::RunResult> ScriptedWorker::ExecuteItem(const arbor::v1::RunItem& item) {
  // Prepare the sequence, as the engine does.
  Sequence seq;
  if (item.has_fork_from()) {
    auto parent = sequences_.find(item.fork_from());
    if (parent == sequences_.end()) return absl::NotFoundError("fork_from unknown");
    const int32_t n = item.has_fork_length() ? item.fork_length()
                                             : static_cast<int32_t>(parent->second.tokens.size());
    seq.tokens.assign(parent->second.tokens.begin(), parent->second.tokens.begin() + n);
    seq.last_sampled =
        n == static_cast<int32_t>(parent->second.tokens.size()) && parent->second.last_sampled;
  } else if (auto it = sequences_.find(item.sequence_id()); it != sequences_.end()) {
    seq = it->second;
    if (item.has_truncate_to()) {
      if (item.truncate_to() < 1 || item.truncate_to() > static_cast<int>(seq.tokens.size())) {
        return absl::InvalidArgumentError("truncate_to out of range");
      }
      seq.tokens.resize(item.truncate_to());
      seq.last_sampled = false;
    }
  } else if (item.has_truncate_to()) {
    return absl::NotFoundError("continue of an unknown sequence");
  }
  for (int32_t t : item.append()) {
    if (t < 0 || t >= kVocab) return absl::InvalidArgumentError("append token out of range");
    seq.tokens.push_back(t);
    seq.last_sampled = false;
  }
  if (seq.tokens.empty()) return absl::InvalidArgumentError("empty sequence");

  ASSIGN_OR_RETURN(entropix::PolicyConfig policy,
                   policy::PolicyFromProto(item.policy(), entropix::PolicyConfig{}));
  arbor::v1::RunResult result;
  result.set_sequence_id(item.sequence_id());
  result.set_stop_reason(arbor::v1::STOP_REASON_MAX_STEPS);
  ItemDecoder decoder(item, std::move(policy), eos_ids_, max_context_,
                      static_cast<int32_t>(seq.tokens.size()));
  for (int step_index = 0; step_index < item.max_steps(); ++step_index) {
    ASSIGN_OR_RETURN(const bool done,
                     decoder.Step(script_, step_index, seq.tokens, seq.last_sampled, result));
    if (done) break;
  }
  result.set_length(static_cast<int32_t>(seq.tokens.size()));
  sequences_[item.sequence_id()] = std::move(seq);
  return result;
}

}  // namespace arbor::coordinator::testing
