// Starting and stopping an Arbor gRPC server the same way in every binary.
//
// Each server also serves grpc.health.v1 (so load balancers, `arbor`, Kubernetes probes and tests
// can ask "are you up?") and server reflection (so grpcurl works without the .proto files).
#ifndef ARBOR_RPC_SERVER_H_
#define ARBOR_RPC_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace arbor::rpc {

// The largest request message a server accepts (gRPC's default, stated so that the HTTP gateway
// can refuse a larger body with 413 before it becomes a call).
inline constexpr int kMaxRequestMessageBytes = 4 << 20;

class Server {
 public:
  // Binds `address` ("host:port"; port 0 picks a free one) with `credentials` (plaintext when
  // null; rpc/security.h makes TLS ones) and starts serving `services`, which must outlive the
  // server. Fails with UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      const std::string& address, const std::vector<grpc::Service*>& services,
      std::shared_ptr<grpc::ServerCredentials> credentials = nullptr);

  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // "host:port" with the bound port, for clients and logs.
  const std::string& address() const { return address_; }

  // Health reports NOT_SERVING (or SERVING again) from now on, for the whole server ("") and for
  // every service it serves by its full name (e.g. "arbor.v1.Worker"), as grpc.health.v1 clients
  // and Kubernetes probes ask; in-flight calls continue.
  void SetServing(bool serving);
  // The status of one named service of grpc.health.v1 (e.g. the coordinator's "arbor.ready");
  // SetServing(bool) and Shutdown set every service at once.
  void SetServing(const std::string& service, bool serving);
  // Stops accepting calls, lets in-flight ones finish for up to `grace`, then cancels the rest.
  void Shutdown(absl::Duration grace);
  // Blocks until Shutdown has completed.
  void Wait();
  // A channel to this server's own services without a socket (the HTTP gateway's path in).
  std::shared_ptr<grpc::Channel> InProcessChannel();

 private:
  Server(std::unique_ptr<grpc::Server> server, int port, std::string address,
         std::unique_ptr<std::vector<std::string>> services,
         std::unique_ptr<grpc::Service> reflection_v1);

  // The full names of the registered services (health answers for each; reflection lists them).
  std::unique_ptr<std::vector<std::string>> services_;
  std::unique_ptr<grpc::Service> reflection_v1_;  // Outlives server_: declared before it.
  std::unique_ptr<grpc::Server> server_;
  int port_;
  std::string address_;
};

// Replaces the port of "host:port" (IPv6 "[::1]:port" too) with `port`.
std::string WithPort(const std::string& address, int port);

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_SERVER_H_
