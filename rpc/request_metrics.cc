#include "rpc/request_metrics.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/cluster.pb.h"
#include "arbor/v1/generation.pb.h"
#include "arbor/v1/worker.pb.h"
#include "grpc/health/v1/health.pb.h"

namespace arbor::rpc {
namespace {

namespace gx = grpc::experimental;

// "package.Service/Method" for every method of the services our servers host. A message of
// each file is named, so that its descriptor is linked into every binary.
std::vector<std::string> KnownMethods() {
  std::vector<std::string> methods;
  for (const google::protobuf::FileDescriptor* file :
       {arbor::v1::GenerateRequest::descriptor()->file(),
        arbor::v1::HeartbeatRequest::descriptor()->file(),
        arbor::v1::RunRequest::descriptor()->file(),
        grpc::health::v1::HealthCheckRequest::descriptor()->file()}) {
    for (int s = 0; s < file->service_count(); ++s) {
      const google::protobuf::ServiceDescriptor* service = file->service(s);
      for (int m = 0; m < service->method_count(); ++m) {
        methods.push_back(absl::StrCat(service->full_name(), "/", service->method(m)->name()));
      }
    }
  }
  return methods;
}

std::vector<std::string> CodeNames() {
  std::vector<std::string> names;
  for (int code = grpc::StatusCode::OK; code <= grpc::StatusCode::UNAUTHENTICATED; ++code) {
    names.push_back(absl::StatusCodeToString(static_cast<absl::StatusCode>(code)));
  }
  return names;
}

// One per call: counts the status the call ends with.
class CountingInterceptor final : public gx::Interceptor {
 public:
  CountingInterceptor(metrics::Family<metrics::Counter>& handled, absl::string_view method)
      : handled_(handled), method_(method) {}

  void Intercept(gx::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(gx::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const auto code = static_cast<absl::StatusCode>(methods->GetSendStatus().error_code());
      handled_.WithLabels({method_, absl::StatusCodeToString(code)}).Inc();
    }
    methods->Proceed();
  }

 private:
  metrics::Family<metrics::Counter>& handled_;
  const std::string method_;
};

}  // namespace

RequestMetrics::RequestMetrics(metrics::Registry& registry)
    : handled_(registry.AddCounter("arbor_grpc_server_handled_total",
                                   "RPCs answered, by method and gRPC status code.",
                                   {{"method", KnownMethods()}, {"code", CodeNames()}})) {}

gx::Interceptor* RequestMetrics::CreateServerInterceptor(gx::ServerRpcInfo* info) {
  absl::string_view method = info->method() == nullptr ? "" : info->method();
  if (!method.empty() && method.front() == '/') method.remove_prefix(1);
  return new CountingInterceptor(handled_, method);
}

}  // namespace arbor::rpc
