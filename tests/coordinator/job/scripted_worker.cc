#include "tests/coordinator/job/scripted_worker.h"

#include <algorithm>
#include <optional>
#include <cmath>

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
                         ProgressCallback progress) {
  absl::StatusOr<arbor::v1::RunResponse> response = Execute(request);
  if (progress && response.ok()) progress(ProgressOf(*response));
  {
    absl::MutexLock lock(&mu_);
    if (hold_) {
      held_.push_back([done, response](bool abandoned) {
        abandoned ? done(absl::UnavailableError("scripted worker: run abandoned")) : done(response);
      });
      return;
    }
  }
  done(std::move(response));
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

void ScriptedWorker::ReleaseHeld() {
  std::vector<std::function<void(bool)>> held;
  {
    absl::MutexLock lock(&mu_);
    held.swap(held_);
  }
  for (auto& f : held) f(/*abandoned=*/false);
}

void ScriptedWorker::AbandonRuns() {
  std::vector<std::function<void(bool)>> held;
  {
    absl::MutexLock lock(&mu_);
    held.swap(held_);
  }
  for (auto& f : held) f(/*abandoned=*/true);
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
    return absl::ResourceExhaustedError(absl::StrCat("scripted worker: KV cache holds ",
                                                     max_sequences_, " sequences"));
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
                   rpc::PolicyFromProto(item.policy(), entropix::PolicyConfig{}));
  const bool canonical = policy.mode == entropix::PolicyMode::kCanonical;
  entropix::DecisionContext context;
  context.inserts_used = item.inserts_used();
  context.backspaces_used = item.backspaces_used();
  context.last_insert_position = item.has_last_insert_position() ? item.last_insert_position() : -1;
  context.branch_depth = item.branch_depth();
  auto banned_at = [&item](int32_t position) {
    std::vector<int32_t> banned;
    for (const arbor::v1::TokenBan& ban : item.bans()) {
      if (ban.position() == position) banned.push_back(ban.token_id());
    }
    return banned;
  };
  auto is_stop = [&](int32_t t) {
    const auto& extra = item.stop().stop_token_ids();
    if (std::find(extra.begin(), extra.end(), t) != extra.end()) return true;
    return !item.stop().ignore_eos() &&
           std::find(eos_ids_.begin(), eos_ids_.end(), t) != eos_ids_.end();
  };

  arbor::v1::RunResult result;
  result.set_sequence_id(item.sequence_id());
  result.set_stop_reason(arbor::v1::STOP_REASON_MAX_STEPS);
  int calm = 0;
  // DeepConf's early stop, as the worker applies it (RunItem.stop_below_confidence).
  std::optional<entropix::GroupConfidence> confidence;
  if (item.stop_below_confidence() > 0.0f) {
    confidence.emplace(item.confidence_window());
    for (float c : item.recent_confidences()) confidence->Add(c);
  }
  std::vector<entropix::TokenLogprob> previous_top;  // The last step's top-K.
  // Position of the job's first generated token, as the worker derives it.
  const int32_t first_generated = static_cast<int32_t>(seq.tokens.size()) - item.generated_before();
  for (int step_index = 0; step_index < item.max_steps(); ++step_index) {
    const int32_t position = static_cast<int32_t>(seq.tokens.size());
    if (position >= max_context_) {
      result.set_stop_reason(arbor::v1::STOP_REASON_CONTEXT);
      break;
    }
    const ScriptedStep scripted =
        script_({position, seq.tokens, item.branch_id(), item.branch_depth()});
    // Tokens outside the distribution get a negligible but finite logit, as a real row would.
    std::vector<float> logits(kVocab, kNegligibleLogit);
    double total = 0.0;
    for (const auto& [id, p] : scripted.distribution) total += p;
    entropix::LogitMetrics lm;
    lm.entropy = scripted.entropy;
    lm.varentropy = scripted.varentropy;
    lm.logsumexp = 0.0f;
    for (const auto& [id, p] : scripted.distribution) {
      logits[id] = static_cast<float>(std::log(p / total));
      lm.top_k.push_back({id, logits[id]});
    }
    std::sort(lm.top_k.begin(), lm.top_k.end(),
              [](const auto& a, const auto& b) { return a.logprob > b.logprob; });
    if (static_cast<int>(lm.top_k.size()) > item.top_k()) lm.top_k.resize(item.top_k());

    context.position = position;
    context.generated = position - first_generated;
    context.previous_backspaceable = seq.last_sampled && banned_at(position - 1).empty();
    context.previous_is_insert_token =
        !policy.insert.tokens.empty() && seq.tokens.back() == policy.insert.tokens.back();
    const std::vector<int32_t> banned = banned_at(position);
    entropix::StepOptions options;
    options.banned = banned;
    options.stop_on_structural = item.stop_on_structural() || canonical;
    const entropix::RngKey key{item.seed(), static_cast<uint32_t>(position), item.branch_id(), 0};
    ASSIGN_OR_RETURN(entropix::StepOutcome outcome,
                     entropix::PolicyStep(entropix::Candidates{logits, {}, lm.logsumexp}, lm,
                                          scripted.attention, policy, context, key, options));
    arbor::v1::StepResult& step = *result.add_steps();
    step.set_position(position);
    *step.mutable_metrics() = rpc::MetricsToProto(outcome.metrics);
    step.set_strategy(rpc::StrategyToProto(outcome.decision.strategy));
    step.set_temperature(outcome.decision.sampling.temperature);
    step.set_top_p(outcome.decision.sampling.top_p);
    step.set_top_k_param(outcome.decision.sampling.top_k);
    step.set_min_p(outcome.decision.sampling.min_p);
    auto fill_top = [](const std::vector<entropix::TokenLogprob>& top,
                       arbor::v1::StepResult& into) {
      for (const auto& t : top) {
        arbor::v1::TokenLogprob* out = into.add_top_k();
        out->set_token_id(t.id);
        out->set_logprob(t.logprob);
      }
    };
    int32_t appended = -1;
    if (outcome.token) {
      appended = outcome.token->id;
      step.set_token_id(appended);
      step.set_logprob(outcome.token->logprob);
      seq.last_sampled = true;
    } else if (canonical && outcome.decision.strategy == entropix::Strategy::kInsert) {
      appended = outcome.decision.insert_tokens.front();  // Tests use one thinking token.
      step.set_token_id(appended);
      step.set_logprob(logits[appended]);
      ++context.inserts_used;
      context.last_insert_position = position;
      seq.last_sampled = false;
    } else {
      step.set_token_id(-1);
      fill_top(lm.top_k, step);
      // As the real worker does: the step before a BACKSPACE stop carries the top-K its token
      // will be re-drawn from.
      const int n = result.steps_size();
      if (outcome.decision.strategy == entropix::Strategy::kBackspace && n >= 2 &&
          result.steps(n - 2).top_k_size() == 0) {
        fill_top(previous_top, *result.mutable_steps(n - 2));
      }
      result.set_stop_reason(arbor::v1::STOP_REASON_STRUCTURAL);
      break;
    }
    seq.tokens.push_back(appended);
    const bool is_calm = outcome.metrics.entropy < policy.branch.calm_entropy &&
                         outcome.metrics.varentropy < policy.branch.calm_varentropy;
    calm = is_calm ? calm + 1 : 0;
    bool confidence_fell = false;
    if (confidence && outcome.token) {
      std::vector<float> logprobs;
      for (const auto& t : lm.top_k) logprobs.push_back(t.logprob);
      confidence->Add(entropix::TokenConfidence(logprobs));
      confidence_fell =
          confidence->full() && confidence->current() < item.stop_below_confidence();
    }
    bool done = true;
    if (is_stop(appended)) {
      result.set_stop_reason(arbor::v1::STOP_REASON_STOP_TOKEN);
    } else if (confidence_fell) {
      result.set_stop_reason(arbor::v1::STOP_REASON_LOW_CONFIDENCE);
    } else if (item.stop_when_calm() && calm >= policy.branch.calm_steps) {
      result.set_stop_reason(arbor::v1::STOP_REASON_CALM);
    } else {
      done = step_index + 1 == item.max_steps();
    }
    if (item.top_k_every_step() || done) fill_top(lm.top_k, step);
    previous_top = lm.top_k;
    if (done) break;
  }
  result.set_length(static_cast<int32_t>(seq.tokens.size()));
  sequences_[item.sequence_id()] = std::move(seq);
  return result;
}

}  // namespace arbor::coordinator::testing
