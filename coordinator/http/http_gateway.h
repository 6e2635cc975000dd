// The coordinator's HTTP face: an OpenAI-compatible API (completions and chat completions,
// blocking and streamed as server-sent events), the model list, a readiness probe, and jobs and
// their trees as JSON, for the tools users already have (OpenAI clients, curl, browsers).
//
// Every request goes through the coordinator's own gRPC services on an in-process channel, so
// HTTP and gRPC clients get the same validation, admission control and jobs; the gateway only
// translates. Routes (docs/HTTP.md):
//   POST /v1/completions, POST /v1/chat/completions, POST /tokenize, POST /detokenize
//   GET  /v1/models, GET /health, GET /v1/jobs, GET /v1/jobs/{id}, GET /v1/jobs/{id}/tree
//   GET  /ui/... (the web viewer, viewer_routes.h)
// Other routes (e.g. /metrics) can be added to server() before Start.
#ifndef ARBOR_COORDINATOR_HTTP_HTTP_GATEWAY_H_
#define ARBOR_COORDINATOR_HTTP_HTTP_GATEWAY_H_

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "arbor/v1/cluster.grpc.pb.h"
#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "coordinator/http/http_metrics.h"
#include "httplib.h"
#include "model/tokenizer/chat_template.h"

namespace arbor::rpc {
class Authenticator;
}  // namespace arbor::rpc

namespace arbor::coordinator::http {

struct HttpGatewayOptions {
  std::string listen;    // "host:port"; port 0 picks a free port.
  std::string model_id;  // The id /v1/models lists and requests may name.
  // Other names requests may give the model (its file name, the name it was fetched by); any of
  // these or model_id, compared ignoring case, is accepted.
  std::vector<std::string> model_aliases;
  size_t max_body_bytes = 8u << 20;  // Larger bodies get 413, chunked or not.
  // Connections served at once (a stream holds one): `threads` always, up to `max_threads` when
  // they are all busy (elastic_task_queue.h: slow clients cannot starve the others).
  int threads = 64;
  int max_threads = 1024;
  // HTTPS with this PEM certificate chain and key when set (the process's --tls_cert/--tls_key).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Sent with the gateway's Cluster calls (the worker list behind /health): the key by which
  // ClusterAccess knows the process's own gateway.
  std::string cluster_internal_key;
  // The process's bearer tokens (null without a token file; it must outlive the gateway): a
  // request body is parsed only once its Authorization header has passed, so an anonymous
  // caller cannot reach the parser. The services check the token again for what it may see.
  const rpc::Authenticator* authenticator = nullptr;
  // Whether the jobs of a request's choices fit its caller's tenant limits now (given the
  // Authorization value): asked before any choice starts, so that a request of n choices that
  // cannot run them all is refused (429) without starting any. Null without a token file.
  std::function<absl::Status(absl::string_view authorization,
                             absl::Span<const arbor::v1::GenerateRequest> choices)>
      tenant_room;
  // The coordinator's default policy, every field set: what a completion that names no policy
  // runs, and so what its OpenAI fields mean (openai_sampling.h).
  arbor::v1::PolicyConfig default_policy;
  // Whether the job store answers (null without one): /health is 503 while it does not, for a
  // coordinator that cannot record or renew its jobs should get no new ones.
  std::function<absl::Status()> store_health;
  // The served model's tool format (its chat template's): how chat completions' tools are shown
  // to it and its calls read (docs/HTTP.md, "Tool calling"); kNone refuses tools.
  model::ToolFormat tool_format = model::ToolFormat::kNone;
};

class HttpGateway {
 public:
  // Binds now, so a bad or busy address fails at start-up; serves after Start.
  static absl::StatusOr<std::unique_ptr<HttpGateway>> Bind(const HttpGatewayOptions& options);
  ~HttpGateway();
  HttpGateway(const HttpGateway&) = delete;
  HttpGateway& operator=(const HttpGateway&) = delete;

  int port() const { return port_; }
  httplib::Server& server() { return *server_; }

  // Serves on a thread of its own, calling the Generation service through `generation` and the
  // Cluster service (the worker list behind /health) through `cluster`: the same server's, or
  // the --cluster_listen one's.
  void Start(std::shared_ptr<grpc::Channel> generation, std::shared_ptr<grpc::Channel> cluster);
  // Stops accepting connections; streams in flight end with their jobs.
  void Stop();

 private:
  explicit HttpGateway(HttpGatewayOptions options);
  void AddRoutes();
  void Completions(const httplib::Request& request, const httplib::ContentReader& content,
                   httplib::Response& response, bool chat);
  // POST /tokenize and /detokenize (tokenize_body.h).
  void Tokenize(const httplib::Request& request, const httplib::ContentReader& content,
                httplib::Response& response);
  void Detokenize(const httplib::Request& request, const httplib::ContentReader& content,
                  httplib::Response& response);
  // Whether a request naming `name` asks for the model served here (model_id or an alias).
  bool ServesModel(const std::string& name) const;
  // NOT_FOUND naming the served model unless `name` is empty or ServesModel(name).
  absl::Status CheckModel(const std::string& name) const;
  // The coordinator's workers (the Cluster service's list), for /health and /v1/models.
  absl::StatusOr<arbor::v1::ListWorkersResponse> Workers() const;
  void Models(httplib::Response& response);
  void Health(httplib::Response& response);
  void Jobs(const httplib::Request& request, httplib::Response& response);
  void Job(const httplib::Request& request, const std::string& id, httplib::Response& response);
  void Tree(const httplib::Request& request, const std::string& id, httplib::Response& response);
  void Replay(const httplib::Request& request, const std::string& id,
              const httplib::ContentReader& content, httplib::Response& response);
  // The request's Authorization value once it is checked here (with an authenticator): what a
  // route that reads a body calls before reading it.
  absl::StatusOr<std::string> Authenticated(const httplib::Request& request) const;

  // Counts every answered request and times it from routing (http_metrics.h).
  void AddRequestMetrics();

  const HttpGatewayOptions options_;
  const int64_t started_unix_s_;
  HttpMetrics http_metrics_;
  std::unique_ptr<httplib::Server> server_;  // An httplib::SSLServer with TLS.
  int port_ = 0;
  std::unique_ptr<arbor::v1::Generation::Stub> generation_;
  std::unique_ptr<arbor::v1::Cluster::Stub> cluster_;
  std::thread thread_;
};

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_HTTP_GATEWAY_H_
