// Every RPC a server answers, counted by method and status code
// (arbor_grpc_server_handled_total{method, code}), in one place for all services and binaries:
// the worker's Run outcomes, the coordinator's Generate/Submit/... outcomes, health checks. A
// gRPC server interceptor sees the final status of unary and streaming calls alike, so no
// service method counts for itself.
//
// Label values are bounded: `method` is one of the methods the arbor.v1 and grpc.health.v1
// services declare ("arbor.v1.Worker/Run"), anything else (reflection) is "other"; `code` is a
// gRPC status code name ("OK", "RESOURCE_EXHAUSTED").
#ifndef ARBOR_RPC_REQUEST_METRICS_H_
#define ARBOR_RPC_REQUEST_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include "metrics/registry.h"

namespace arbor::rpc {

class RequestMetrics final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `registry` must outlive the servers this is installed on.
  explicit RequestMetrics(metrics::Registry& registry);

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  metrics::Family<metrics::Counter>& handled_;
};

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_REQUEST_METRICS_H_
