#include "coordinator/service/generation_service.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "coordinator/service/event_stream.h"
#include "coordinator/service/request_validation.h"
#include "coordinator/tree/tree_export.h"
#include "rpc/grpc_status.h"
#include "views/tree_diff.h"

namespace arbor::coordinator {
namespace {

// The call's gRPC deadline, InfiniteFuture when the client set none (gRPC reports a time
// point centuries away then).
absl::Time CallDeadline(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  const auto now = std::chrono::system_clock::now();
  if (deadline - now > std::chrono::hours(24 * 365)) return absl::InfiniteFuture();
  return absl::Now() + absl::FromChrono(deadline - now);
}

// Generation.Replay's call, answered when the replay job finishes. A cancelled call (the client
// went away, or the server drains) cancels that job, whose finished event then answers.
class ReplayCall final : public grpc::ServerUnaryReactor {
 public:
  explicit ReplayCall(std::shared_ptr<Job> job) : job_(std::move(job)) {}
  void OnCancel() override { job_->Cancel(); }
  void OnDone() override { delete this; }

 private:
  const std::shared_ptr<Job> job_;
};

grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(rpc::ToGrpcStatus(status));
  return reactor;
}

}  // namespace

absl::StatusOr<rpc::Identity> GenerationService::Caller(
    const grpc::CallbackServerContext& context) const {
  if (auth_ == nullptr) return rpc::OpenIdentity();
  ASSIGN_OR_RETURN(rpc::Identity identity, auth_->Authenticate(context));
  if (identity.role == rpc::Role::kWorker) {
    return absl::PermissionDeniedError(
        absl::StrCat("token '", identity.name,
                     "' has the worker role: it may register a worker, "
                     "not run or read jobs"));
  }
  return identity;
}

absl::StatusOr<std::shared_ptr<JobRecord>> GenerationService::FindJob(
    const grpc::CallbackServerContext& context, const std::string& job_id,
    const std::string& field) {
  ASSIGN_OR_RETURN(const rpc::Identity caller, Caller(context));
  return FindJobOf(caller, job_id, field);
}

absl::StatusOr<std::shared_ptr<JobRecord>> GenerationService::FindJobOf(const rpc::Identity& caller,
                                                                        const std::string& job_id,
                                                                        const std::string& field) {
  RETURN_IF_ERROR(ValidateJobId(job_id, field));
  ASSIGN_OR_RETURN(std::shared_ptr<JobRecord> record, registry_->Find(job_id));
  // Another user's job answers exactly as an unknown one: its existence is not revealed.
  if (caller.role != rpc::Role::kAdmin && record->owner != caller.name) {
    return registry_->NotFound(job_id);
  }
  return record;
}

grpc::ServerWriteReactor<arbor::v1::GenerateEvent>* GenerationService::Generate(
    grpc::CallbackServerContext* context, const arbor::v1::GenerateRequest* request) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return new FailedStream(caller.status());
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      launcher_->Launch(*request, CallDeadline(*context), *caller);
  if (!record.ok()) return new FailedStream(record.status());
  return EventStream::Open(*std::move(record), /*owns_job=*/true);
}

grpc::ServerUnaryReactor* GenerationService::Submit(grpc::CallbackServerContext* context,
                                                    const arbor::v1::GenerateRequest* request,
                                                    arbor::v1::JobRef* response) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return Answer(context, caller.status());
  // A detached job outlives the call: the call's deadline bounds the submission only.
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      launcher_->Launch(*request, absl::InfiniteFuture(), *caller);
  if (record.ok()) response->set_job_id((*record)->job_id);
  return Answer(context, record.status());
}

grpc::ServerWriteReactor<arbor::v1::GenerateEvent>* GenerationService::Watch(
    grpc::CallbackServerContext* context, const arbor::v1::JobRef* request) {
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      FindJob(*context, request->job_id(), "job_id");
  if (!record.ok()) return new FailedStream(record.status());
  return EventStream::Open(*std::move(record), /*owns_job=*/false);
}

grpc::ServerUnaryReactor* GenerationService::Cancel(grpc::CallbackServerContext* context,
                                                    const arbor::v1::JobRef* request,
                                                    arbor::v1::Job* response) {
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      FindJob(*context, request->job_id(), "job_id");
  if (record.ok()) {
    (*record)->job->Cancel();
    *response = (*record)->ToProto(/*brief=*/false);
  }
  return Answer(context, record.status());
}

grpc::ServerUnaryReactor* GenerationService::GetJob(grpc::CallbackServerContext* context,
                                                    const arbor::v1::JobRef* request,
                                                    arbor::v1::Job* response) {
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      FindJob(*context, request->job_id(), "job_id");
  if (record.ok()) {
    *response = (*record)->ToProto(/*brief=*/false);
    response->set_prompt(prompts_->Decode(response->request().tokens().token_ids()));
  }
  return Answer(context, record.status());
}

grpc::ServerUnaryReactor* GenerationService::ListJobs(grpc::CallbackServerContext* context,
                                                      const arbor::v1::ListJobsRequest* request,
                                                      arbor::v1::ListJobsResponse* response) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return Answer(context, caller.status());
  if (absl::Status valid = ValidateListJobsRequest(*request); !valid.ok()) {
    return Answer(context, valid);
  }
  absl::flat_hash_set<arbor::v1::JobState> states;
  for (int state : request->states()) states.insert(static_cast<arbor::v1::JobState>(state));
  const int limit = request->limit() == 0 ? 100 : request->limit();
  for (const std::shared_ptr<JobRecord>& record :
       registry_->List(limit, states, request->client_tag(),
                       caller->role == rpc::Role::kAdmin ? nullptr : &caller->name)) {
    *response->add_jobs() = record->ToProto(/*brief=*/true);
  }
  return Answer(context, absl::OkStatus());
}

absl::StatusOr<arbor::v1::Tree> GenerationService::TreeOf(
    const JobRecord& record, const arbor::v1::GetTreeRequest& part) const {
  TreeExportOptions options;
  options.job_id = record.job_id;
  options.root = part.root();
  options.max_depth = part.max_depth();
  options.top_logprobs = part.include_top_logprobs() ? record.top_logprobs : 0;
  options.is_stop_token = [job = record.job](int32_t id) { return job->IsStopToken(id); };
  TokenTextFn token_text;
  if (prompts_->has_tokenizer()) {
    token_text = [prompts = prompts_](int32_t id) { return prompts->TokenText(id); };
  }
  absl::StatusOr<arbor::v1::Tree> tree = absl::InternalError("tree not read");
  record.job->ReadTree(
      [&](const SearchTree& search_tree) { tree = ExportTree(search_tree, options, token_text); });
  // The request was checked: an error here is a root that is not a node of this tree.
  if (!tree.ok()) return absl::NotFoundError(absl::StrCat("root: ", tree.status().message()));
  return tree;
}

grpc::ServerUnaryReactor* GenerationService::GetTree(grpc::CallbackServerContext* context,
                                                     const arbor::v1::GetTreeRequest* request,
                                                     arbor::v1::Tree* response) {
  if (absl::Status valid = ValidateGetTreeRequest(*request); !valid.ok()) {
    return Answer(context, valid);
  }
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      FindJob(*context, request->job_id(), "job_id");
  if (!record.ok()) return Answer(context, record.status());
  absl::StatusOr<arbor::v1::Tree> tree = TreeOf(**record, *request);
  if (tree.ok()) *response = *std::move(tree);
  return Answer(context, tree.status());
}

grpc::ServerUnaryReactor* GenerationService::Replay(grpc::CallbackServerContext* context,
                                                    const arbor::v1::ReplayRequest* request,
                                                    arbor::v1::ReplayResult* response) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return Answer(context, caller.status());
  absl::StatusOr<std::shared_ptr<JobRecord>> original =
      FindJobOf(*caller, request->job_id(), "job_id");
  if (!original.ok()) return Answer(context, original.status());
  const arbor::v1::JobState state = (*original)->job->state();
  if (state == arbor::v1::JOB_STATE_QUEUED || state == arbor::v1::JOB_STATE_RUNNING) {
    return Answer(context, absl::FailedPreconditionError(
                               absl::StrCat("job_id: job ", request->job_id(),
                                            " has not finished; replay it once it has")));
  }
  arbor::v1::GetTreeRequest whole;
  whole.set_include_top_logprobs(true);
  absl::StatusOr<arbor::v1::Tree> expected = TreeOf(**original, whole);
  if (!expected.ok()) return Answer(context, expected.status());
  absl::StatusOr<arbor::v1::GenerateRequest> again =
      request->has_policy() ? (*original)->job->ReplayRequest(request->policy())
                            : (*original)->job->ReplayRequest();
  if (!again.ok()) return Answer(context, again.status());
  again->set_client_tag("replay of " + request->job_id());
  absl::StatusOr<std::shared_ptr<JobRecord>> replay =
      launcher_->Launch(*again, absl::InfiniteFuture(), *caller);  // Cut short, it would differ.
  if (!replay.ok()) return Answer(context, replay.status());
  response->set_job_id(request->job_id());
  response->set_replay_job_id((*replay)->job_id);
  response->set_policy_changed(request->has_policy());
  auto* reactor = new ReplayCall((*replay)->job);
  // Answered from the thread that emits the new job's finished event; the log holds the
  // subscriber until then (the record outlives its own log's calls).
  (*replay)->events.Subscribe([this, reactor, response, whole, expected = *std::move(expected),
                               record = replay->get()](const arbor::v1::GenerateEvent& event) {
    if (!event.has_finished()) return;
    absl::StatusOr<arbor::v1::Tree> actual = TreeOf(*record, whole);
    if (actual.ok()) {
      arbor::v1::ReplayResult result = views::CompareReplayTrees(expected, *actual);
      result.set_job_id(response->job_id());
      result.set_replay_job_id(response->replay_job_id());
      result.set_policy_changed(response->policy_changed());
      *response = std::move(result);
    }
    reactor->Finish(rpc::ToGrpcStatus(actual.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* GenerationService::Score(grpc::CallbackServerContext* context,
                                                   const arbor::v1::ScoreRequest* request,
                                                   arbor::v1::ScoreResponse* response) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return Answer(context, caller.status());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // Answered from the worker's callback: no gRPC thread waits for the forward.
  scorer_.Score(*request, CallDeadline(*context),
                [reactor, response](absl::StatusOr<arbor::v1::ScoreResponse> scored) {
                  if (scored.ok()) *response = *std::move(scored);
                  reactor->Finish(rpc::ToGrpcStatus(scored.status()));
                });
  return reactor;
}

grpc::ServerUnaryReactor* GenerationService::Tokenize(grpc::CallbackServerContext* context,
                                                      const arbor::v1::GenerateRequest* request,
                                                      arbor::v1::TokenizeResponse* response) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return Answer(context, caller.status());
  // The checks and encoding a job of this request would go through, so the count is exact.
  absl::StatusOr<CheckedPrompt> prompt = launcher_->CheckPrompt(*request);
  if (!prompt.ok()) return Answer(context, prompt.status());
  response->mutable_token_ids()->Add(prompt->tokens.begin(), prompt->tokens.end());
  response->set_max_context(prompt->model.max_context());
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* GenerationService::Detokenize(
    grpc::CallbackServerContext* context, const arbor::v1::DetokenizeRequest* request,
    arbor::v1::DetokenizeResponse* response) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return Answer(context, caller.status());
  if (!prompts_->has_tokenizer()) {
    return Answer(context, absl::FailedPreconditionError(
                               "the coordinator has no tokenizer; start it with --model"));
  }
  if (request->token_ids().empty()) return Answer(context, absl::OkStatus());  // No text.
  // Checked as a token prompt is: each id in the workers' vocabulary.
  arbor::v1::GenerateRequest as_prompt;
  *as_prompt.mutable_tokens()->mutable_token_ids() = request->token_ids();
  absl::StatusOr<CheckedPrompt> prompt = launcher_->CheckPrompt(as_prompt);
  if (!prompt.ok()) return Answer(context, prompt.status());
  response->set_text(prompts_->Decode(prompt->tokens));
  return Answer(context, absl::OkStatus());
}

}  // namespace arbor::coordinator
