// WorkerClient over the arbor.v1.Worker gRPC service, with the callback API: a Run is a
// ClientContext and a response owned by one heap call object that the completion frees, so
// thousands of jobs can wait on workers without a thread each.
#ifndef ARBOR_COORDINATOR_SERVICE_GRPC_WORKER_CLIENT_H_
#define ARBOR_COORDINATOR_SERVICE_GRPC_WORKER_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "coordinator/cluster/worker_pool.h"
#include "coordinator/job/worker_client.h"

namespace arbor::coordinator {

class GrpcWorkerClient final : public WorkerClient {
 public:
  // The handle's stub is shared with the worker pool; it stays valid after the worker leaves
  // (calls then fail with UNAVAILABLE). Runs and releases carry the handle's owner_epoch.
  explicit GrpcWorkerClient(const WorkerHandle& handle,
                            absl::Duration release_timeout = absl::Seconds(5));

  void Run(arbor::v1::RunRequest request, absl::Duration timeout, RunCallback done,
           ProgressCallback progress, std::shared_ptr<RunCancellation> cancel) override;
  void Release(std::vector<uint64_t> sequence_ids) override;
  void AbandonRuns() override;
  std::string id() const override { return worker_id_; }
  uint64_t incarnation() const override { return incarnation_; }

 private:
  const std::string worker_id_;
  const std::shared_ptr<arbor::v1::Worker::StubInterface> stub_;
  const uint64_t incarnation_;
  const uint64_t owner_epoch_;
  class StreamedRun;
  const absl::Duration release_timeout_;
  void UnaryRun(arbor::v1::RunRequest request, absl::Duration timeout, RunCallback done,
                RunCancellation& cancel);
  // Runs in flight, for AbandonRuns; each completion removes its own. Shared with the
  // completions, which may run after the client is gone.
  struct Runs {
    absl::Mutex mu;
    absl::flat_hash_map<const void*, std::shared_ptr<grpc::ClientContext>> contexts
        ABSL_GUARDED_BY(mu);
    bool abandoned ABSL_GUARDED_BY(mu) = false;
    // The outcome of a finished call, with UNAVAILABLE for one AbandonRuns cancelled.
    absl::Status Ended(const void* call, const grpc::Status& status, const std::string& worker);
  };
  const std::shared_ptr<Runs> runs_ = std::make_shared<Runs>();
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_GRPC_WORKER_CLIENT_H_
