#include "coordinator/service/generation_service.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "absl/algorithm/container.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "coordinator/service/event_stream.h"
#include "coordinator/service/job_archive.h"
#include "coordinator/service/request_validation.h"
#include "coordinator/service/watch_relay.h"
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

// The events a Watch call already has: 0 without the key.
absl::StatusOr<int64_t> EventsSeen(const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kLastEventId);
  if (it == metadata.end()) return 0;
  int64_t seen = 0;
  if (!absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &seen) ||
      seen < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kLastEventId, ": must be the count of events received, >= 0"));
  }
  return seen;
}

// The value of the call's `key` metadata; empty without it.
std::string Metadata(const grpc::CallbackServerContext& context, const char* key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(key);
  return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

// Whether a call about `stored` goes to the coordinator that runs it: the job has not ended,
// its holder renews its lease and said where it is reached, and the call was not relayed here
// already (relays never chain: a relayed call is answered from what this coordinator has).
bool Relayable(const grpc::CallbackServerContext& context, const StoredJob& stored,
               JobStore& store) {
  return RunsElsewhere(stored, store) && !stored.lease.address.empty() &&
         Metadata(context, kRelayedKey).empty();
}

// Why a stored job that has not ended cannot be watched or read here yet: this coordinator
// holds it and starts it shortly, another runs it (whose tree reaches this one when it ends,
// and whose events a Watch relays unless the holder recorded no address or the call is itself
// relayed), or its coordinator stopped renewing its lease and a survivor is about to take it
// over.
absl::Status NotRunningHere(const StoredJob& stored, JobStore& store) {
  const std::string& job_id = stored.accepted.job_id;
  if (store.Holds(job_id)) {
    return absl::UnavailableError(
        absl::StrCat("job ", job_id,
                     " was accepted before the coordinator restarted, or taken over from one "
                     "that stopped, and has not been started again yet (it starts once a worker "
                     "is ready); retry shortly"));
  }
  if (RunsElsewhere(stored, store)) {
    return absl::UnavailableError(absl::StrCat(
        "job ", job_id, " runs on coordinator ", stored.lease.coordinator,
        stored.lease.address.empty()
            ? ", which holds its lease and recorded no address to reach it at (start it with "
              "--advertise)"
            : ", which holds its lease",
        ": ask that coordinator, or retry here once the job has ended (its result reaches "
        "every coordinator through the job store)"));
  }
  return absl::UnavailableError(absl::StrCat(
      "job ", job_id, "'s coordinator (",
      stored.lease.coordinator.empty() ? "none yet" : stored.lease.coordinator,
      ") stopped renewing its lease: a coordinator on the same job store takes it over within a "
      "renewal period and runs it again; retry shortly"));
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

arbor::v1::Job GenerationService::StoredJobAnswer(const StoredJob& stored, bool brief) const {
  arbor::v1::Job job = StoredJobMessage(stored, brief);
  if (RunsElsewhere(stored, *store_)) job.set_state(arbor::v1::JOB_STATE_RUNNING);
  return job;
}

arbor::v1::Job GenerationService::StoredJobWithPrompt(const StoredJob& stored) const {
  arbor::v1::Job job = StoredJobAnswer(stored, /*brief=*/false);
  job.set_prompt(prompts_->Decode(job.request().tokens().token_ids()));
  return job;
}

absl::StatusOr<GenerationService::FoundJob> GenerationService::FindAnywhere(
    const grpc::CallbackServerContext& context, const std::string& job_id,
    const std::string& field) {
  ASSIGN_OR_RETURN(const rpc::Identity caller, Caller(context));
  FoundJob found;
  absl::StatusOr<std::shared_ptr<JobRecord>> live = FindJobOf(caller, job_id, field);
  if (live.ok()) {
    found.live = *std::move(live);
    return found;
  }
  if (store_ == nullptr || !absl::IsNotFound(live.status())) return live.status();
  absl::StatusOr<StoredJob> stored = store_->Get(job_id);
  if (absl::IsNotFound(stored.status())) return registry_->NotFound(job_id);
  if (!stored.ok()) return stored.status();
  // Another user's job answers exactly as an unknown one, as in memory.
  if (caller.role != rpc::Role::kAdmin && stored->accepted.owner != caller.name) {
    return registry_->NotFound(job_id);
  }
  found.stored = *std::move(stored);
  return found;
}

grpc::ServerWriteReactor<arbor::v1::GenerateEvent>* GenerationService::Watch(
    grpc::CallbackServerContext* context, const arbor::v1::JobRef* request) {
  absl::StatusOr<int64_t> seen = EventsSeen(*context);
  if (!seen.ok()) return new FailedStream(seen.status());
  absl::StatusOr<FoundJob> found = FindAnywhere(*context, request->job_id(), "job_id");
  if (!found.ok()) return new FailedStream(found.status());
  if (found->live != nullptr) {
    return EventStream::Open(std::move(found->live), /*owns_job=*/false, *seen);
  }
  const StoredJob& stored = *found->stored;
  if (stored.finished) return EventStream::OpenStored(stored.finished->events, *seen);
  if (Relayable(*context, stored, *store_)) {
    return WatchRelay::Open(relay_, registry_, store_, request->job_id(),
                            Metadata(*context, "authorization"), *seen);
  }
  return new FailedStream(NotRunningHere(stored, *store_));
}

grpc::ServerUnaryReactor* GenerationService::Cancel(grpc::CallbackServerContext* context,
                                                    const arbor::v1::JobRef* request,
                                                    arbor::v1::Job* response) {
  absl::StatusOr<FoundJob> found = FindAnywhere(*context, request->job_id(), "job_id");
  if (!found.ok()) return Answer(context, found.status());
  if (found->live != nullptr) {
    found->live->job->Cancel();
    *response = found->live->ToProto(/*brief=*/false);
    return Answer(context, absl::OkStatus());
  }
  // A stored job that ended stays as it ended; one that has not is cancelled by whichever
  // coordinator holds it, at its next lease renewal (this one included, once it starts it).
  absl::StatusOr<StoredJob> asked = found->stored->finished
                                        ? *std::move(found->stored)
                                        : store_->RequestCancel(request->job_id());
  if (asked.ok()) *response = StoredJobAnswer(*asked, /*brief=*/false);
  return Answer(context, asked.status());
}

grpc::ServerUnaryReactor* GenerationService::GetJob(grpc::CallbackServerContext* context,
                                                    const arbor::v1::JobRef* request,
                                                    arbor::v1::Job* response) {
  absl::StatusOr<FoundJob> found = FindAnywhere(*context, request->job_id(), "job_id");
  if (!found.ok()) return Answer(context, found.status());
  if (found->live == nullptr && Relayable(*context, *found->stored, *store_)) {
    const std::string address = found->stored->lease.address;
    // A holder that no longer answers leaves the job as the store has it: RUNNING, until a
    // survivor takes it over.
    return RelayRead(
        context, relay_.dial, address,
        [request, response](auto& holder, grpc::ClientContext* call, auto done) {
          holder.GetJob(call, request, response, std::move(done));
        },
        [this, response, stored = *std::move(found->stored)](const grpc::Status& status) {
          if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return status;
          *response = StoredJobWithPrompt(stored);
          return grpc::Status::OK;
        });
  }
  *response = found->live != nullptr ? JobMessage(*found->live, *prompts_)
                                     : StoredJobWithPrompt(*found->stored);
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* GenerationService::ListJobs(grpc::CallbackServerContext* context,
                                                      const arbor::v1::ListJobsRequest* request,
                                                      arbor::v1::ListJobsResponse* response) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return Answer(context, caller.status());
  if (absl::Status valid = ValidateListJobsRequest(*request); !valid.ok()) {
    return Answer(context, valid);
  }
  absl::StatusOr<std::vector<arbor::v1::Job>> jobs = ListAnywhere(*caller, *request);
  if (jobs.ok()) {
    for (arbor::v1::Job& job : *jobs) *response->add_jobs() = std::move(job);
  }
  return Answer(context, jobs.status());
}

absl::StatusOr<std::vector<arbor::v1::Job>> GenerationService::ListAnywhere(
    const rpc::Identity& caller, const arbor::v1::ListJobsRequest& request) {
  JobFilter filter;
  for (int state : request.states()) {
    filter.states.push_back(static_cast<arbor::v1::JobState>(state));
  }
  const int limit = request.limit() == 0 ? 100 : request.limit();
  // Who is not an admin sees its own jobs only.
  if (caller.role != rpc::Role::kAdmin) {
    if (!request.owner().empty() && request.owner() != caller.name) {
      return std::vector<arbor::v1::Job>();
    }
    filter.owner = caller.name;
  } else if (!request.owner().empty()) {
    filter.owner = request.owner();
  }
  filter.client_tag = request.client_tag();
  filter.model = request.model();
  if (request.created_after_unix_ms() != 0) {
    filter.created_after = absl::FromUnixMillis(request.created_after_unix_ms());
  }
  if (request.created_before_unix_ms() != 0) {
    filter.created_before = absl::FromUnixMillis(request.created_before_unix_ms());
  }
  // The jobs in memory run on the served model: all of them or none match a model filter.
  const absl::StatusOr<arbor::v1::ModelInfo> served = launcher_->pool()->Model();
  const bool model_matches =
      filter.model.empty() || (served.ok() && served->name() == filter.model);
  std::vector<arbor::v1::Job> jobs;
  absl::flat_hash_set<std::string> in_memory;
  for (const std::shared_ptr<JobRecord>& record :
       registry_->List(std::numeric_limits<int>::max(), {}, filter.client_tag,
                       filter.owner ? &*filter.owner : nullptr)) {
    in_memory.insert(record->job_id);
    const bool state_matches =
        filter.states.empty() || absl::c_linear_search(filter.states, record->job->state());
    if (model_matches && state_matches && record->created >= filter.created_after &&
        record->created < filter.created_before) {
      jobs.push_back(record->ToProto(/*brief=*/true));
    }
  }
  if (store_ != nullptr) {
    // Those in memory and the store's newest `limit` besides. An unfinished row answers RUNNING
    // while another coordinator holds it: a RUNNING filter reads the unfinished rows too, and
    // each job is matched by the state it answers.
    JobFilter stored_filter = filter;
    stored_filter.limit = limit + static_cast<int>(in_memory.size());
    if (absl::c_linear_search(filter.states, arbor::v1::JOB_STATE_RUNNING)) {
      stored_filter.states.push_back(arbor::v1::JOB_STATE_QUEUED);
    }
    ASSIGN_OR_RETURN(const std::vector<StoredJob> stored,
                     store_->List(stored_filter, /*brief=*/true));
    for (const StoredJob& job : stored) {
      // Memory has the live state of a job the store has as accepted.
      if (in_memory.contains(job.accepted.job_id)) continue;
      arbor::v1::Job answer = StoredJobAnswer(job, /*brief=*/true);
      if (filter.states.empty() || absl::c_linear_search(filter.states, answer.state())) {
        jobs.push_back(std::move(answer));
      }
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const arbor::v1::Job& a, const arbor::v1::Job& b) {
    return a.created_unix_ms() > b.created_unix_ms();
  });
  if (static_cast<int>(jobs.size()) > limit) jobs.resize(limit);
  return jobs;
}

grpc::ServerUnaryReactor* GenerationService::GetTree(grpc::CallbackServerContext* context,
                                                     const arbor::v1::GetTreeRequest* request,
                                                     arbor::v1::Tree* response) {
  if (absl::Status valid = ValidateGetTreeRequest(*request); !valid.ok()) {
    return Answer(context, valid);
  }
  absl::StatusOr<FoundJob> found = FindAnywhere(*context, request->job_id(), "job_id");
  if (!found.ok()) return Answer(context, found.status());
  if (found->live == nullptr && Relayable(*context, *found->stored, *store_)) {
    return RelayRead(context, relay_.dial, found->stored->lease.address,
                     [request, response](auto& holder, grpc::ClientContext* call, auto done) {
                       holder.GetTree(call, request, response, std::move(done));
                     });
  }
  absl::StatusOr<arbor::v1::Tree> tree =
      found->live != nullptr    ? ExportJobTree(*found->live, *request, *prompts_)
      : found->stored->finished ? StoredTree(*found->stored, *request)
                                : NotRunningHere(*found->stored, *store_);
  if (tree.ok()) *response = *std::move(tree);
  return Answer(context, tree.status());
}

grpc::ServerUnaryReactor* GenerationService::Replay(grpc::CallbackServerContext* context,
                                                    const arbor::v1::ReplayRequest* request,
                                                    arbor::v1::ReplayResult* response) {
  absl::StatusOr<rpc::Identity> caller = Caller(*context);
  if (!caller.ok()) return Answer(context, caller.status());
  absl::StatusOr<FoundJob> original = FindAnywhere(*context, request->job_id(), "job_id");
  if (!original.ok()) return Answer(context, original.status());
  const bool ended = original->live != nullptr
                         ? original->live->job->state() != arbor::v1::JOB_STATE_QUEUED &&
                               original->live->job->state() != arbor::v1::JOB_STATE_RUNNING
                         : original->stored->finished.has_value();
  if (!ended) {
    return Answer(context, absl::FailedPreconditionError(
                               absl::StrCat("job_id: job ", request->job_id(),
                                            " has not finished; replay it once it has")));
  }
  arbor::v1::GetTreeRequest whole;
  whole.set_include_top_logprobs(true);
  const arbor::v1::PolicyConfig* change = request->has_policy() ? &request->policy() : nullptr;
  // A job of an earlier coordinator process replays from what the store kept of it.
  absl::StatusOr<arbor::v1::Tree> expected = original->live != nullptr
                                                 ? ExportJobTree(*original->live, whole, *prompts_)
                                                 : StoredTree(*original->stored, whole);
  if (!expected.ok()) return Answer(context, expected.status());
  absl::StatusOr<arbor::v1::GenerateRequest> again =
      original->live != nullptr ? (change ? original->live->job->ReplayRequest(*change)
                                          : original->live->job->ReplayRequest())
                                : StoredReplayRequest(*original->stored, change);
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
    absl::StatusOr<arbor::v1::Tree> actual = ExportJobTree(*record, whole, *prompts_);
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

grpc::ServerUnaryReactor* GenerationService::Detokenize(grpc::CallbackServerContext* context,
                                                        const arbor::v1::DetokenizeRequest* request,
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
