// The Cluster gRPC service (proto/arbor/v1/cluster.proto) over a WorkerPool: workers register
// and heartbeat (learning the coordinator's epoch), admins list, drain and undrain them, a
// stopping worker deregisters. Callers are checked by ClusterAccess, inputs here; errors name
// the field.
#ifndef ARBOR_COORDINATOR_CLUSTER_CLUSTER_SERVICE_H_
#define ARBOR_COORDINATOR_CLUSTER_CLUSTER_SERVICE_H_

#include "arbor/v1/cluster.grpc.pb.h"
#include "coordinator/cluster/cluster_access.h"
#include "coordinator/cluster/worker_pool.h"

namespace arbor::coordinator {

class ClusterService final : public arbor::v1::Cluster::Service {
 public:
  // `pool` must outlive the service.
  ClusterService(WorkerPool* pool, absl::Duration heartbeat_interval,
                 ClusterAccess access = ClusterAccess())
      : pool_(pool), heartbeat_interval_(heartbeat_interval), access_(access) {}

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
  grpc::Status DeregisterWorker(grpc::ServerContext* context,
                                const arbor::v1::DeregisterWorkerRequest* request,
                                arbor::v1::DeregisterWorkerResponse* response) override;
  grpc::Status UndrainWorker(grpc::ServerContext* context,
                             const arbor::v1::UndrainWorkerRequest* request,
                             arbor::v1::UndrainWorkerResponse* response) override;

 private:
  // The caller may do `need`, and `worker_id` is a well-formed id.
  absl::Status CheckCaller(const grpc::ServerContext& context, ClusterAccess::Need need,
                           const std::string& worker_id) const;

  WorkerPool* const pool_;
  const absl::Duration heartbeat_interval_;
  const ClusterAccess access_;
};

// The checks RegisterWorker applies to a worker's self-description: a bounded id, a usable
// model and cache.
absl::Status ValidateWorkerInfo(const arbor::v1::WorkerInfo& info);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_CLUSTER_SERVICE_H_
