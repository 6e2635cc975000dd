#include "coordinator/service/scorer.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "coordinator/service/request_validation.h"
#include "coordinator/tree/tree_export.h"
#include "policy/policy_convert.h"
#include "rpc/server.h"

namespace arbor::coordinator {
namespace {

// A Run without a caller deadline still ends: scoring is one batched prefill, so this bounds
// only a worker that stopped answering.
constexpr absl::Duration kMaxRunTime = absl::Minutes(10);

// The prompt, policy and limits of a ScoreRequest as the GenerateRequest whose validation
// (field names included) they share.
arbor::v1::GenerateRequest PromptRequest(const arbor::v1::ScoreRequest& request) {
  arbor::v1::GenerateRequest out;
  switch (request.prompt_case()) {
    case arbor::v1::ScoreRequest::kText:
      out.set_text(request.text());
      break;
    case arbor::v1::ScoreRequest::kChat:
      *out.mutable_chat() = request.chat();
      break;
    case arbor::v1::ScoreRequest::kTokens:
      *out.mutable_tokens() = request.tokens();
      break;
    case arbor::v1::ScoreRequest::PROMPT_NOT_SET:
      break;
  }
  *out.mutable_policy() = request.policy();
  out.set_top_logprobs(request.top_logprobs());
  out.set_client_tag(request.client_tag());
  return out;
}

absl::StatusOr<std::vector<int32_t>> ContinuationTokens(const arbor::v1::Continuation& continuation,
                                                        const std::string& at,
                                                        const CheckedPrompt& prompt,
                                                        const PromptCodec& codec) {
  std::vector<int32_t> tokens;
  switch (continuation.continuation_case()) {
    case arbor::v1::Continuation::kText: {
      if (continuation.text().empty() || !IsValidUtf8(continuation.text())) {
        return absl::InvalidArgumentError(at + ".text: must be non-empty UTF-8");
      }
      ASSIGN_OR_RETURN(tokens, codec.EncodeContinuation(continuation.text(), at + ".text"));
      if (tokens.empty()) return absl::InvalidArgumentError(at + ".text: encodes to no tokens");
      RETURN_IF_ERROR(CheckVocabulary(tokens, prompt.model, at + ".text"));
      break;
    }
    case arbor::v1::Continuation::kTokens: {
      const auto& ids = continuation.tokens().token_ids();
      if (ids.empty()) return absl::InvalidArgumentError(at + ".tokens.token_ids: empty");
      for (int j = 0; j < ids.size(); ++j) {
        if (ids[j] < 0 || ids[j] >= prompt.model.vocab_size()) {
          return absl::InvalidArgumentError(absl::StrCat(at, ".tokens.token_ids[", j, "]: ", ids[j],
                                                         " is outside [0, ",
                                                         prompt.model.vocab_size(), ")"));
        }
      }
      tokens.assign(ids.begin(), ids.end());
      break;
    }
    case arbor::v1::Continuation::CONTINUATION_NOT_SET:
      return absl::InvalidArgumentError(at + ": set text or tokens");
  }
  const int64_t total = static_cast<int64_t>(prompt.tokens.size() + tokens.size());
  if (total > prompt.model.max_context()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": the prompt's ", prompt.tokens.size(), " tokens and its ", tokens.size(),
                     " exceed the context of ", prompt.model.max_context()));
  }
  return tokens;
}

// Every scored token comes back as a step with its metrics and `top_logprobs` alternatives (and,
// to the client, their texts): refused before any work when that reply would not fit one gRPC
// message, rather than failing after the worker computed it. Wire bytes per token and per
// alternative, rounded up from a 64 × 1,000-token reply with 64 alternatives (44.5 MB).
absl::Status CheckReplySize(const std::vector<std::vector<int32_t>>& continuations,
                            int32_t top_logprobs) {
  constexpr int64_t kTokenBytes = 96, kAlternativeBytes = 20;
  int64_t tokens = 0;
  for (const std::vector<int32_t>& c : continuations) tokens += static_cast<int64_t>(c.size());
  const int64_t reply = tokens * (kTokenBytes + kAlternativeBytes * top_logprobs);
  if (reply <= rpc::kMaxRequestMessageBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "continuations: ", tokens, " tokens to score with top_logprobs ", top_logprobs,
      " make a reply of about ", reply >> 20, " MiB, over the ", rpc::kMaxRequestMessageBytes >> 20,
      " MiB one gRPC message may carry; split them over several Score calls or ask for fewer "
      "top_logprobs"));
}

}  // namespace

struct Scorer::Call {
  std::vector<int32_t> prompt;
  std::vector<std::vector<int32_t>> continuations;
  arbor::v1::PolicyConfig policy;  // Resolved: every field set.
  int32_t top_logprobs = 0;
  absl::Time deadline;
  Done done;
  bool retried = false;
};

void Scorer::Score(const arbor::v1::ScoreRequest& request, absl::Time deadline, Done done) {
  absl::StatusOr<std::shared_ptr<Call>> call = Prepare(request, deadline, done);
  if (!call.ok()) return done(call.status());
  Send(*std::move(call), /*exclude=*/"");
}

absl::StatusOr<std::shared_ptr<Scorer::Call>> Scorer::Prepare(
    const arbor::v1::ScoreRequest& request, absl::Time deadline, Done done) {
  ASSIGN_OR_RETURN(CheckedPrompt prompt, launcher_->CheckPrompt(PromptRequest(request)));
  const int n = request.continuations_size();
  if (n < 1 || n > kMaxContinuations) {
    return absl::InvalidArgumentError(
        absl::StrCat("continuations: ", n, " is outside [1, ", kMaxContinuations, "]"));
  }
  auto call = std::make_shared<Call>();
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(
        std::vector<int32_t> tokens,
        ContinuationTokens(request.continuations(i), absl::StrCat("continuations[", i, "]"), prompt,
                           *launcher_->prompts()));
    call->continuations.push_back(std::move(tokens));
  }
  RETURN_IF_ERROR(CheckReplySize(call->continuations, prompt.request.top_logprobs));
  call->policy = policy::PolicyToProto(prompt.request.policy);
  call->prompt = std::move(prompt.tokens);
  call->top_logprobs = prompt.request.top_logprobs;
  call->deadline = deadline;
  call->done = std::move(done);
  return call;
}

void Scorer::Send(std::shared_ptr<Call> call, const std::string& exclude) {
  WorkerHandle handle;
  absl::flat_hash_set<std::string> excluded;
  if (!exclude.empty()) excluded.insert(exclude);
  absl::StatusOr<std::shared_ptr<WorkerClient>> client =
      launcher_->Route(call->prompt, excluded, &handle);
  if (!client.ok()) return call->done(client.status());
  WorkerPool* pool = launcher_->pool();
  if (handle.info.max_top_k() > 0 && call->top_logprobs > handle.info.max_top_k()) {
    pool->JobLeft(handle.worker_id);
    return call->done(absl::InvalidArgumentError(
        absl::StrCat("top_logprobs: more than the ", handle.info.max_top_k(),
                     " alternatives worker ", handle.worker_id, " returns per step")));
  }
  const absl::Duration left = std::min(call->deadline - absl::Now(), kMaxRunTime);
  if (left <= absl::ZeroDuration()) {
    pool->JobLeft(handle.worker_id);
    return call->done(absl::DeadlineExceededError("the call's deadline passed before scoring"));
  }
  arbor::v1::RunRequest run;
  std::vector<uint64_t> ids;
  for (const std::vector<int32_t>& continuation : call->continuations) {
    arbor::v1::RunItem* item = run.add_items();
    item->set_sequence_id(launcher_->NextSequenceId());
    item->mutable_append()->Add(call->prompt.begin(), call->prompt.end());
    item->mutable_append()->Add(continuation.begin(), continuation.end());
    item->set_score_tokens(static_cast<int32_t>(continuation.size()));
    *item->mutable_policy() = call->policy;
    item->set_top_k(call->top_logprobs);
    ids.push_back(item->sequence_id());
  }
  std::shared_ptr<WorkerClient> worker = *std::move(client);
  worker->Run(
      std::move(run), left,
      [this, call, worker, ids,
       worker_id = handle.worker_id](absl::StatusOr<arbor::v1::RunResponse> response) {
        worker->Release(ids);
        launcher_->pool()->JobLeft(worker_id);
        OnRun(call, worker_id, std::move(response));
      },
      /*progress=*/nullptr,
      // Scoring is one bounded prefill with its deadline; nothing cancels it before that.
      std::make_shared<RunCancellation>());
}

void Scorer::OnRun(std::shared_ptr<Call> call, const std::string& worker_id,
                   absl::StatusOr<arbor::v1::RunResponse> response) {
  if (!response.ok()) {
    if (response.status().code() == absl::StatusCode::kUnavailable && !call->retried) {
      call->retried = true;
      return Send(std::move(call), worker_id);
    }
    return call->done(
        absl::Status(response.status().code(),
                     absl::StrCat("worker ", worker_id, ": ", response.status().message())));
  }
  const PromptCodec& codec = *launcher_->prompts();
  arbor::v1::ScoreResponse out;
  out.mutable_prompt_token_ids()->Add(call->prompt.begin(), call->prompt.end());
  out.set_worker_id(worker_id);
  out.set_worker_us(response->timings().prefill_us() + response->timings().decode_us());
  for (int i = 0; i < response->results_size(); ++i) {
    const arbor::v1::RunResult& result = response->results(i);
    out.set_cached_tokens(out.cached_tokens() + result.cached_tokens());
    if (result.steps_size() != static_cast<int>(call->continuations[i].size())) {
      return call->done(absl::InternalError(
          absl::StrCat("worker ", worker_id, " scored ", result.steps_size(), " of the ",
                       call->continuations[i].size(), " tokens of continuations[", i, "]")));
    }
    arbor::v1::ScoredContinuation* scored = out.add_continuations();
    bool greedy = true;
    for (const arbor::v1::StepResult& step : result.steps()) {
      arbor::v1::ScoredToken* token = scored->add_tokens();
      token->set_token_id(step.token_id());
      token->set_text(SanitizeUtf8(codec.TokenText(step.token_id())));
      token->set_position(step.position());
      token->set_logprob(step.logprob());
      token->set_rank(step.rank());
      *token->mutable_metrics() = step.metrics();
      token->set_strategy(step.strategy());
      for (const arbor::v1::TokenLogprob& top : step.top_k()) {
        arbor::v1::TokenLogprob* alternative = token->add_top_logprobs();
        *alternative = top;
        alternative->set_text(SanitizeUtf8(codec.TokenText(top.token_id())));
      }
      scored->set_total_logprob(scored->total_logprob() + step.logprob());
      greedy &= step.rank() == 1;
    }
    scored->set_mean_logprob(scored->total_logprob() / result.steps_size());
    scored->set_greedy(greedy);
  }
  call->done(std::move(out));
}

}  // namespace arbor::coordinator
