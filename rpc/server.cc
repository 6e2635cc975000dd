#include "rpc/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/impl/server_initializer.h>

#include <algorithm>
#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "metrics/registry.h"
#include "rpc/reflection_v1.h"
#include "rpc/request_metrics.h"
#include "rpc/unparsable_requests.h"

namespace arbor::rpc {
namespace {

constexpr char kHealthService[] = "grpc.health.v1.Health";

// Copies the names of the services a builder registers (as the reflection plugin learns them),
// so that health can answer for each by name.
class ServiceNames : public grpc::ServerBuilderPlugin {
 public:
  explicit ServiceNames(std::vector<std::string>* out) : out_(out) {}
  std::string name() override { return "arbor_service_names"; }
  void InitServer(grpc::ServerInitializer* initializer) override {
    if (const std::vector<std::string>* names = initializer->GetServiceList()) *out_ = *names;
  }
  void Finish(grpc::ServerInitializer*) override {}
  void ChangeArguments(const std::string&, void*) override {}

 private:
  std::vector<std::string>* out_;
};

// Adds a ServiceNames plugin to one builder.
class WithServiceNames : public grpc::ServerBuilderOption {
 public:
  explicit WithServiceNames(std::vector<std::string>* out) : out_(out) {}
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->push_back(std::make_unique<ServiceNames>(out_));
  }

 private:
  std::vector<std::string>* out_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const std::string& address, const std::vector<grpc::Service*>& services,
    std::shared_ptr<grpc::ServerCredentials> credentials) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  grpc::ServerBuilder builder;
  int port = 0;
  // Without this gRPC sets SO_REUSEPORT and a second server "binds" a port already in use.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(kMaxRequestMessageBytes);
  builder.AddListeningPort(
      address, credentials != nullptr ? credentials : grpc::InsecureServerCredentials(), &port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  // First, so that the metrics count the status it rewrites.
  interceptors.push_back(std::make_unique<UnparsableRequests>());
  interceptors.push_back(std::make_unique<RequestMetrics>(metrics::DefaultRegistry()));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  auto names = std::make_unique<std::vector<std::string>>();
  builder.SetOption(std::make_unique<WithServiceNames>(names.get()));
  auto reflection_v1 = std::make_unique<ReflectionV1>(names.get());
  builder.RegisterService(reflection_v1.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", address,
                                               "': the address is malformed or already in use"));
  }
  // The default health service joins the server outside the builder's service list.
  if (server->GetHealthCheckService() != nullptr &&
      std::find(names->begin(), names->end(), kHealthService) == names->end()) {
    names->push_back(kHealthService);
  }
  auto started =
      std::unique_ptr<Server>(new Server(std::move(server), port, WithPort(address, port),
                                         std::move(names), std::move(reflection_v1)));
  for (const std::string& name : *started->services_) started->SetServing(name, true);
  return started;
}

Server::Server(std::unique_ptr<grpc::Server> server, int port, std::string address,
               std::unique_ptr<std::vector<std::string>> services,
               std::unique_ptr<grpc::Service> reflection_v1)
    : services_(std::move(services)),
      reflection_v1_(std::move(reflection_v1)),
      server_(std::move(server)),
      port_(port),
      address_(std::move(address)) {}

Server::~Server() {
  Shutdown(absl::ZeroDuration());
  Wait();
}

void Server::SetServing(bool serving) {
  server_->GetHealthCheckService()->SetServingStatus(serving);
}

void Server::SetServing(const std::string& service, bool serving) {
  server_->GetHealthCheckService()->SetServingStatus(service, serving);
}

void Server::Shutdown(absl::Duration grace) {
  SetServing(false);
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
}

void Server::Wait() { server_->Wait(); }

std::shared_ptr<grpc::Channel> Server::InProcessChannel() {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);  // Whole trees of long jobs.
  return server_->InProcessChannel(arguments);
}

std::string WithPort(const std::string& address, int port) {
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  return absl::StrCat(host, ":", port);
}

}  // namespace arbor::rpc
