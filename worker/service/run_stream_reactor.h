// Worker.RunStream's server side: one engine run whose progress (v1::RunProgress, after each
// step) and final response are written to the stream as they come. The engine calls back on
// its own thread and must not block, so updates wait here while a write is in flight, and
// progress that piles up behind a slow reader is merged into one update.
#ifndef ARBOR_WORKER_SERVICE_RUN_STREAM_REACTOR_H_
#define ARBOR_WORKER_SERVICE_RUN_STREAM_REACTOR_H_

#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "worker/engine/engine.h"

namespace arbor::worker {

class RunStreamReactor final : public grpc::ServerWriteReactor<v1::RunUpdate> {
 public:
  // Queues `request` on `engine` (which must outlive the call); the reactor deletes itself
  // when the call is done.
  static RunStreamReactor* Start(grpc::CallbackServerContext* context, Engine* engine,
                                 const v1::RunRequest& request);
  // A call refused before it reached the engine (a draining worker).
  static RunStreamReactor* Refuse(const grpc::Status& status);

  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  RunStreamReactor() = default;

  void OnProgress(v1::RunProgress progress);              // Engine thread.
  void OnResult(absl::StatusOr<v1::RunResponse> result);  // Engine thread, once.
  // Starts the next write, or finishes the call once the engine answered and nothing is left
  // to write. Called after any change, outside mu_ (a reaction may run inline).
  void Pump();

  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // A write failed: the client is gone.
  std::optional<v1::RunUpdate> progress_ ABSL_GUARDED_BY(mu_);  // Not yet written, merged.
  std::optional<v1::RunUpdate> response_ ABSL_GUARDED_BY(mu_);  // The engine's answer.
  std::optional<grpc::Status> status_ ABSL_GUARDED_BY(mu_);     // Set once the engine answered.
  v1::RunUpdate in_flight_;  // The update being written (owned by the write until it is done).
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_SERVICE_RUN_STREAM_REACTOR_H_
