// The Cluster gRPC service (proto/arbor/v1/cluster.proto) over a WorkerPool: workers register
// and heartbeat, admins list and drain them. Inputs are checked here; errors name the field.
#ifndef ARBOR_COORDINATOR_CLUSTER_SERVICE_H_
#define ARBOR_COORDINATOR_CLUSTER_SERVICE_H_

#include "arbor/v1/cluster.grpc.pb.h"
#include "coordinator/worker_pool.h"

namespace arbor::coordinator {

class ClusterService final : public arbor::v1::Cluster::Service {
 public:
  // `pool` must outlive the service.
  explicit ClusterService(WorkerPool* pool, absl::Duration heartbeat_interval)
      : pool_(pool), heartbeat_interval_(heartbeat_interval) {}

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const arbor::v1::RegisterWorkerRequest* request,
                              arbor::v1::RegisterWorkerResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const arbor::v1::HeartbeatRequest* request,
                         arbor::v1::HeartbeatResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context,
                           const arbor::v1::ListWorkersRequest* request,
                           arbor::v1::ListWorkersResponse* response) override;
  grpc::Status DrainWorker(grpc::ServerContext* context,
                           const arbor::v1::DrainWorkerRequest* request,
                           arbor::v1::DrainWorkerResponse* response) override;

 private:
  WorkerPool* const pool_;
  const absl::Duration heartbeat_interval_;
};

// The checks RegisterWorker applies to a worker's self-description: a usable model and cache.
absl::Status ValidateWorkerInfo(const arbor::v1::WorkerInfo& info);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_SERVICE_H_
