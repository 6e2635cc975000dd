// The seam between a job and the worker it runs on: the two Worker RPCs a job needs (Run and
// Release), asynchronous so that no thread waits on a worker. GrpcWorkerClient
// (service/grpc_worker_client.h) is the real implementation; tests substitute a scripted fake here
// and nowhere else.
#ifndef ARBOR_COORDINATOR_JOB_WORKER_CLIENT_H_
#define ARBOR_COORDINATOR_JOB_WORKER_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/run_cancellation.h"

namespace arbor::coordinator {

class WorkerClient {
 public:
  using RunCallback = std::function<void(absl::StatusOr<arbor::v1::RunResponse>)>;
  using ProgressCallback = std::function<void(const arbor::v1::RunProgress&)>;

  virtual ~WorkerClient() = default;

  // Sends `request`; `done` runs exactly once, on any thread (possibly before Run returns), with
  // the response or the RPC's error (UNAVAILABLE: worker gone; RESOURCE_EXHAUSTED: KV full,
  // nothing changed; DEADLINE_EXCEEDED after `timeout`; INVALID_ARGUMENT / NOT_FOUND: a bad item).
  // With `progress` set (Worker.RunStream), the steps the worker decodes arrive through it as
  // they become final, each once and in order, all before `done` (whose response repeats them);
  // a run that then fails has undone them on the worker.
  // `cancel` (never null) is how the job stops the call: once cancelled, the call ends and `done`
  // runs with CANCELLED (or with the answer that raced it); the worker stops the Run within a
  // step and keeps what it created until the job releases it.
  virtual void Run(arbor::v1::RunRequest request, absl::Duration timeout, RunCallback done,
                   ProgressCallback progress, std::shared_ptr<RunCancellation> cancel) = 0;

  // Drops sequences on the worker. Fire and forget: release is idempotent and a worker that is
  // gone has nothing left to drop, so a failure is only logged.
  virtual void Release(std::vector<uint64_t> sequence_ids) = 0;

  // Ends every Run in flight on this client now with UNAVAILABLE (each `done` runs once, as
  // always). For a worker presumed dead: one that is frozen (SIGSTOP, a hung host) keeps its
  // connection open and would hold its calls until their timeouts, and the jobs with them.
  virtual void AbandonRuns() = 0;

  // The worker's id (WorkerInfo.worker_id), for events and logs.
  virtual std::string id() const = 0;
  // Which life of the worker this client talks to (WorkerHandle::incarnation); 0 when unknown.
  virtual uint64_t incarnation() const { return 0; }
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_WORKER_CLIENT_H_
