// The Worker gRPC service (proto/arbor/v1/worker.proto) over an Engine, on gRPC's callback API:
// no thread waits on a call — a Run is queued to the engine and answered from its completion.
#ifndef ARBOR_WORKER_SERVICE_WORKER_SERVICE_H_
#define ARBOR_WORKER_SERVICE_WORKER_SERVICE_H_

#include <atomic>

#include "arbor/v1/worker.grpc.pb.h"
#include "worker/engine/engine.h"
#include "worker/service/sequence_leases.h"

namespace arbor::worker {

class WorkerService final : public v1::Worker::CallbackService {
 public:
  // `engine` (and `leases`, optional) must outlive the service. Run, Release and Health renew
  // the lease of the owner epoch they carry.
  WorkerService(Engine* engine, v1::WorkerInfo info, SequenceLeases* leases = nullptr);

  // From now on Run answers UNAVAILABLE ("draining") and Health reports serving = false;
  // runs already queued finish.
  void Drain() { draining_ = true; }
  void Undrain() { draining_ = false; }
  const v1::WorkerInfo& info() const { return info_; }
  v1::HealthResponse CurrentHealth() const;

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* context,
                                 const v1::InfoRequest* request, v1::WorkerInfo* response) override;
  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* context, const v1::RunRequest* request,
                                v1::RunResponse* response) override;
  grpc::ServerWriteReactor<v1::RunUpdate>* RunStream(grpc::CallbackServerContext* context,
                                                     const v1::RunRequest* request) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* context,
                                    const v1::ReleaseRequest* request,
                                    v1::ReleaseResponse* response) override;
  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* context,
                                   const v1::HealthRequest* request,
                                   v1::HealthResponse* response) override;

 private:
  void Renew(uint64_t owner_epoch) {
    if (leases_ != nullptr) leases_->Renew(owner_epoch);
  }

  Engine* engine_;
  v1::WorkerInfo info_;
  SequenceLeases* leases_;
  std::atomic<bool> draining_{false};
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_SERVICE_WORKER_SERVICE_H_
