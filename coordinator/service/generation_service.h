// The public Generation gRPC service (proto/arbor/v1/generation.proto, docs/API.md) with the
// callback API: Generate and Watch stream through EventStream reactors, the unary methods
// answer inline. Jobs are made by the JobLauncher and kept by the JobRegistry; errors cross
// into gRPC through rpc/grpc_status.h only. With a job store, a job that is no longer in memory
// (evicted, from before a restart, or held by another coordinator on the same store) is
// answered from the store: GetJob, ListJobs, GetTree, Watch and Cancel see a job that ended as
// they saw it live; one running on another coordinator lists as RUNNING, GetJob and GetTree ask
// that coordinator (read_relay.h), Watch streams from it (watch_relay.h), and Cancel reaches it
// through the store.
#ifndef ARBOR_COORDINATOR_SERVICE_GENERATION_SERVICE_H_
#define ARBOR_COORDINATOR_SERVICE_GENERATION_SERVICE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arbor/v1/generation.grpc.pb.h"
#include "coordinator/service/job_launcher.h"
#include "coordinator/service/job_registry.h"
#include "coordinator/service/prompt.h"
#include "coordinator/service/scorer.h"
#include "coordinator/service/watch_relay.h"
#include "coordinator/store/job_store.h"
#include "rpc/tokens.h"

namespace arbor::coordinator {

class GenerationService final : public arbor::v1::Generation::CallbackService {
 public:
  // Every pointer must outlive the service. With `auth` every call needs a bearer token, and a
  // job is visible only to the token that created it and to admins; without, calls are open.
  // `store` may be null (jobs live in memory only); `relay` says how a Watch of a job another
  // coordinator on the store runs is relayed from it.
  GenerationService(JobLauncher* launcher, JobRegistry* registry, const PromptCodec* prompts,
                    const rpc::Authenticator* auth = nullptr, JobStore* store = nullptr,
                    WatchRelayOptions relay = {})
      : launcher_(launcher),
        registry_(registry),
        prompts_(prompts),
        auth_(auth),
        store_(store),
        relay_(std::move(relay)),
        scorer_(launcher) {}

  grpc::ServerWriteReactor<arbor::v1::GenerateEvent>* Generate(
      grpc::CallbackServerContext* context, const arbor::v1::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* context,
                                   const arbor::v1::GenerateRequest* request,
                                   arbor::v1::JobRef* response) override;
  grpc::ServerWriteReactor<arbor::v1::GenerateEvent>* Watch(
      grpc::CallbackServerContext* context, const arbor::v1::JobRef* request) override;
  grpc::ServerUnaryReactor* Cancel(grpc::CallbackServerContext* context,
                                   const arbor::v1::JobRef* request,
                                   arbor::v1::Job* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const arbor::v1::JobRef* request,
                                   arbor::v1::Job* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const arbor::v1::ListJobsRequest* request,
                                     arbor::v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* GetTree(grpc::CallbackServerContext* context,
                                    const arbor::v1::GetTreeRequest* request,
                                    arbor::v1::Tree* response) override;
  grpc::ServerUnaryReactor* Score(grpc::CallbackServerContext* context,
                                  const arbor::v1::ScoreRequest* request,
                                  arbor::v1::ScoreResponse* response) override;
  grpc::ServerUnaryReactor* Replay(grpc::CallbackServerContext* context,
                                   const arbor::v1::ReplayRequest* request,
                                   arbor::v1::ReplayResult* response) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const arbor::v1::GenerateRequest* request,
                                     arbor::v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* context,
                                       const arbor::v1::DetokenizeRequest* request,
                                       arbor::v1::DetokenizeResponse* response) override;

 private:
  // The caller's identity; UNAUTHENTICATED without a valid token, PERMISSION_DENIED for a
  // worker's token.
  absl::StatusOr<rpc::Identity> Caller(const grpc::CallbackServerContext& context) const;
  // A job found in memory (live) or, failing that, in the store (stored).
  struct FoundJob {
    std::shared_ptr<JobRecord> live;
    std::optional<StoredJob> stored;
  };
  // The job `job_id` names (field path `field` in errors), if the context's caller may see it,
  // from memory or else from the store.
  absl::StatusOr<FoundJob> FindAnywhere(const grpc::CallbackServerContext& context,
                                        const std::string& job_id, const std::string& field);
  // A job only the store has, as GetJob and ListJobs answer it: RUNNING while another
  // coordinator holds it, QUEUED while it waits to be run (again), else as it ended.
  arbor::v1::Job StoredJobAnswer(const StoredJob& stored, bool brief) const;
  // GetJob's answer for a job the store has: StoredJobAnswer with the prompt as text.
  arbor::v1::Job StoredJobWithPrompt(const StoredJob& stored) const;
  // ListJobs' answer: the jobs in memory and, with a store, those only it has, newest first.
  absl::StatusOr<std::vector<arbor::v1::Job>> ListAnywhere(
      const rpc::Identity& caller, const arbor::v1::ListJobsRequest& request);
  // The job named by `job_id` (field path `field` in errors), if `caller` may see it.
  absl::StatusOr<std::shared_ptr<JobRecord>> FindJobOf(const rpc::Identity& caller,
                                                       const std::string& job_id,
                                                       const std::string& field);

  JobLauncher* const launcher_;
  JobRegistry* const registry_;
  const PromptCodec* const prompts_;
  const rpc::Authenticator* const auth_;
  JobStore* const store_;
  const WatchRelayOptions relay_;
  Scorer scorer_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_GENERATION_SERVICE_H_
