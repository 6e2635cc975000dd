#include "coordinator/http/http_gateway.h"

#include <google/protobuf/util/json_util.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "coordinator/http/completion_handler.h"
#include "coordinator/http/elastic_task_queue.h"
#include "coordinator/http/job_events.h"
#include "coordinator/http/json_body.h"
#include "coordinator/http/openai_request.h"
#include "coordinator/http/openai_response.h"
#include "coordinator/http/routes.h"
#include "coordinator/http/tokenize_body.h"
#include "coordinator/http/viewer_routes.h"
#include "metrics/http_bind.h"
#include "metrics/registry.h"
#include "nlohmann/json.hpp"
#include "rpc/grpc_status.h"
#include "rpc/internal_key.h"
#include "rpc/server.h"
#include "rpc/tokens.h"
#include "spdlog/spdlog.h"
#include "views/tree_json.h"

namespace arbor::coordinator::http {
namespace {

// When the request this thread serves was routed (httplib serves a request on one thread).
std::optional<absl::Time>& RequestStarted() {
  thread_local std::optional<absl::Time> started;
  return started;
}

// Objects with sorted keys, as these responses are written; the request readers beside this file
// keep the client's order (ordered_json).
using PlainJson = nlohmann::json;

// A unary call to the coordinator's own services with a bound on how long it may take.
std::unique_ptr<grpc::ClientContext> UnaryContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

// The Authorization header, to pass on as gRPC metadata, which must be printable ASCII: a
// header that is not cannot be a valid token, and is refused here rather than failing the call
// inside gRPC.
absl::StatusOr<std::string> Authorization(const httplib::Request& request) {
  std::string value = request.get_header_value("Authorization");
  for (char c : value) {
    if (c < 0x20 || c > 0x7e) {
      return absl::UnauthenticatedError("Authorization: not a valid bearer token");
    }
  }
  return value;
}

// A unary call carrying the request's Authorization value (the services decide who may see
// what).
std::unique_ptr<grpc::ClientContext> CallerContext(const std::string& authorization) {
  std::unique_ptr<grpc::ClientContext> context = UnaryContext();
  if (!authorization.empty()) context->AddMetadata("authorization", authorization);
  return context;
}

// A unary call on behalf of the HTTP request: its credentials go along.
absl::StatusOr<std::unique_ptr<grpc::ClientContext>> CallerContext(
    const httplib::Request& request) {
  absl::StatusOr<std::string> authorization = Authorization(request);
  if (!authorization.ok()) return authorization.status();
  return CallerContext(*authorization);
}

void SetJson(const PlainJson& body, httplib::Response& response) {
  response.set_content(body.dump(-1, ' ', false, PlainJson::error_handler_t::replace),
                       "application/json");
}

// A message in proto3 JSON with the proto's field names, defaults included.
void SetProtoJson(const google::protobuf::Message& message, httplib::Response& response) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string body;
  if (!google::protobuf::util::MessageToJsonString(message, &body, options).ok()) {
    return SetError(absl::InternalError("cannot print the answer as JSON"), response);
  }
  response.set_content(body, "application/json");
}

// `state=running,finished` (JobState names, with or without the JOB_STATE_ prefix, any case).
absl::Status ParseStates(const std::string& list, arbor::v1::ListJobsRequest& request) {
  for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    std::string upper = absl::AsciiStrToUpper(name);
    if (!absl::StartsWith(upper, "JOB_STATE_")) upper = absl::StrCat("JOB_STATE_", upper);
    arbor::v1::JobState state;
    if (!arbor::v1::JobState_Parse(upper, &state) || state == arbor::v1::JOB_STATE_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state: '", name, "' is not queued, running, finished, cancelled or failed"));
    }
    request.add_states(state);
  }
  return absl::OkStatus();
}

// A host name that names this machine's loopback: localhost, 127.x.y.z, ::1 (port aside).
bool IsLoopbackHost(absl::string_view host) {
  if (absl::StartsWith(host, "[")) {  // [::1]:port
    return absl::StartsWith(host, "[::1]");
  }
  host = host.substr(0, host.find(':'));
  return absl::EqualsIgnoreCase(host, "localhost") ||
         (absl::StartsWith(host, "127.") &&
          host.find_first_not_of("0123456789.") == absl::string_view::npos);
}

bool IsLoopbackListen(const std::string& listen) {
  return IsLoopbackHost(listen) || absl::StartsWith(listen, "::1");
}

// On a loopback address anyone on this machine may call, and so may a web page in its browser:
// a page cannot read a cross-origin answer, but it can POST a job blind (its Origin names it),
// and DNS rebinding lets it read one through a name of its own (its Host names it). Both are
// refused; clients that send neither (curl, SDKs) or name loopback (the viewer) pass.
absl::Status CheckLoopbackCaller(const httplib::Request& request) {
  const std::string host = request.get_header_value("Host");
  if (!host.empty() && !IsLoopbackHost(host)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "Host: '", host, "' does not name this loopback server (localhost or 127.0.0.1)"));
  }
  const std::string origin = request.get_header_value("Origin");
  if (origin.empty()) return absl::OkStatus();
  absl::string_view rest = origin;
  const bool web = absl::ConsumePrefix(&rest, "http://") || absl::ConsumePrefix(&rest, "https://");
  if (!web || !IsLoopbackHost(rest)) {
    return absl::PermissionDeniedError(
        absl::StrCat("Origin: '", origin, "' is not this machine; cross-site calls are refused"));
  }
  return absl::OkStatus();
}

// httplib answers an offer of Brotli ("br", which every browser makes) at Brotli's default
// quality 11: 4.6 s for a 2.5 MB tree here, where gzip takes 0.2 s for a similar size. So the
// offer is withdrawn before routing and such clients get gzip. The request is httplib's own
// mutable object; handlers only see it const.
void PreferGzip(const httplib::Request& request) {
  auto range = request.headers.equal_range("Accept-Encoding");
  for (auto it = range.first; it != range.second; ++it) {
    std::vector<std::string> kept;
    for (absl::string_view coding : absl::StrSplit(it->second, ',', absl::SkipWhitespace())) {
      coding = absl::StripAsciiWhitespace(coding);
      if (coding.substr(0, coding.find(';')) != "br") kept.emplace_back(coding);
    }
    const_cast<std::string&>(it->second) = absl::StrJoin(kept, ", ");
  }
}

// Reads the body as it arrives, giving up past `max_bytes`. httplib refuses a Content-Length
// over its limit before reading, but buffers a chunked body whole, whatever its size; reading it
// here bounds both. False when the body is over the limit (response.status 413, whose message
// the error handler writes) or could not be read.
bool ReadBody(const httplib::ContentReader& content, size_t max_bytes, std::string& body,
              httplib::Response& response) {
  bool over = false;
  const bool read = content([&](const char* data, size_t length) {
    if (length > max_bytes - body.size()) {
      over = true;
      return false;
    }
    body.append(data, length);
    return true;
  });
  if (over) response.status = 413;
  if (!read && response.status < 400) response.status = 400;
  return read && !over;
}

// Whether `request` fits the coordinator's gRPC message limit; if not, answers 413 saying so.
bool FitsAJob(const arbor::v1::GenerateRequest& request, httplib::Response& response) {
  if (request.ByteSizeLong() <= static_cast<size_t>(rpc::kMaxRequestMessageBytes)) return true;
  SetError(absl::OutOfRangeError(absl::StrCat(
               "body: the request is ", request.ByteSizeLong(), " bytes as a job; at most ",
               rpc::kMaxRequestMessageBytes, " (and prompts at most --max_prompt_bytes)")),
           response);
  response.status = 413;
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Bind(const HttpGatewayOptions& options) {
  auto gateway = std::unique_ptr<HttpGateway>(new HttpGateway(options));
  if (!gateway->server_->is_valid()) {
    return absl::InvalidArgumentError(
        "--tls_cert, --tls_key: the HTTP server cannot use them (not a matching PEM pair?)");
  }
  absl::StatusOr<int> port = metrics::BindHttpServer(*gateway->server_, options.listen);
  if (!port.ok()) {
    return absl::Status(port.status().code(),
                        absl::StrCat("--http_listen: ", port.status().message()));
  }
  gateway->port_ = *port;
  return gateway;
}

HttpGateway::HttpGateway(HttpGatewayOptions options)
    : options_(std::move(options)),
      started_unix_s_(absl::ToUnixSeconds(absl::Now())),
      http_metrics_(metrics::DefaultRegistry()),
      server_(options_.tls_cert_file.empty()
                  ? std::make_unique<httplib::Server>()
                  : std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(),
                                                         options_.tls_key_file.c_str())) {
  server_->new_task_queue = [threads = options_.threads, max = options_.max_threads] {
    return new ElasticTaskQueue(threads, max);
  };
  server_->set_payload_max_length(options_.max_body_bytes);
  const bool loopback = IsLoopbackListen(options_.listen);
  server_->set_pre_routing_handler(
      [loopback](const httplib::Request& request, httplib::Response& response) {
        RequestStarted() = absl::Now();
        if (loopback) {
          if (absl::Status foreign = CheckLoopbackCaller(request); !foreign.ok()) {
            SetError(foreign, response);
            return httplib::Server::HandlerResponse::Handled;
          }
        }
        PreferGzip(request);
        return httplib::Server::HandlerResponse::Unhandled;
      });
  // Errors httplib itself produces (unknown route, body too large) get OpenAI's error shape too.
  server_->set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) return;
    const absl::StatusCode code = response.status == 404   ? absl::StatusCode::kNotFound
                                  : response.status == 413 ? absl::StatusCode::kInvalidArgument
                                                           : absl::StatusCode::kUnknown;
    const std::string message =
        response.status == 413
            ? "body: larger than the server's limit (--http_max_body_bytes)"
            : absl::StrCat(request.method, " ", request.path, ": HTTP ", response.status);
    response.set_content(ErrorJson(absl::Status(code, message)), "application/json");
  });
  server_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
        SetError(absl::InternalError("the request failed inside the server"), response);
      });
  AddRoutes();
  AddViewerRoutes(*server_);
  AddRequestMetrics();
}

void HttpGateway::AddRequestMetrics() {
  // httplib calls the logger on the thread that served the request, after its response (a
  // stream's included), also for requests it refused before routing (no start time then).
  server_->set_logger([this](const httplib::Request& request, const httplib::Response& response) {
    std::optional<absl::Time>& started = RequestStarted();
    std::optional<double> seconds;
    if (started) seconds = absl::ToDoubleSeconds(absl::Now() - *started);
    started.reset();
    http_metrics_.Observe(request.path, response.status, seconds);
  });
}

HttpGateway::~HttpGateway() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void HttpGateway::AddRoutes() {
  // Completions read their bodies themselves, after the token and within the size limit.
  server_->Post(PatternOf(RouteId::kCompletions),
                [this](const httplib::Request& q, httplib::Response& r,
                       const httplib::ContentReader& content) {
                  Completions(q, content, r, /*chat=*/false);
                });
  server_->Post(
      PatternOf(RouteId::kChatCompletions),
      [this](const httplib::Request& q, httplib::Response& r,
             const httplib::ContentReader& content) { Completions(q, content, r, /*chat=*/true); });
  server_->Post(PatternOf(RouteId::kTokenize),
                [this](const httplib::Request& q, httplib::Response& r,
                       const httplib::ContentReader& content) { Tokenize(q, content, r); });
  server_->Post(PatternOf(RouteId::kDetokenize),
                [this](const httplib::Request& q, httplib::Response& r,
                       const httplib::ContentReader& content) { Detokenize(q, content, r); });
  server_->Get(PatternOf(RouteId::kModels),
               [this](const httplib::Request&, httplib::Response& r) { Models(r); });
  server_->Get(PatternOf(RouteId::kHealth),
               [this](const httplib::Request&, httplib::Response& r) { Health(r); });
  server_->Get(PatternOf(RouteId::kJobs),
               [this](const httplib::Request& q, httplib::Response& r) { Jobs(q, r); });
  server_->Get(PatternOf(RouteId::kJob), [this](const httplib::Request& q, httplib::Response& r) {
    Job(q, q.matches[1], r);
  });
  server_->Get(
      PatternOf(RouteId::kJobTree),
      [this](const httplib::Request& q, httplib::Response& r) { Tree(q, q.matches[1], r); });
  server_->Get(PatternOf(RouteId::kJobEvents),
               [this](const httplib::Request& q, httplib::Response& r) {
                 absl::StatusOr<std::string> authorization = Authorization(q);
                 if (!authorization.ok()) return SetError(authorization.status(), r);
                 AnswerJobEvents(generation_.get(), *authorization, q.matches[1], q, r);
               });
  // The body, if any, changes the policy; it is read after the token, within the size limit.
  server_->Post(
      PatternOf(RouteId::kJobReplay),
      [this](const httplib::Request& q, httplib::Response& r,
             const httplib::ContentReader& content) { Replay(q, q.matches[1], content, r); });
}

void HttpGateway::Start(std::shared_ptr<grpc::Channel> generation,
                        std::shared_ptr<grpc::Channel> cluster) {
  generation_ = arbor::v1::Generation::NewStub(generation);
  cluster_ = arbor::v1::Cluster::NewStub(cluster);
  thread_ = std::thread([this] {
    if (!server_->listen_after_bind()) spdlog::error("HTTP server on port {} stopped", port_);
  });
  spdlog::info("HTTP (OpenAI-compatible API) on port {}", port_);
}

void HttpGateway::Stop() { server_->stop(); }

void HttpGateway::Completions(const httplib::Request& request,
                              const httplib::ContentReader& content, httplib::Response& response,
                              bool chat) {
  absl::StatusOr<std::string> authorization = Authenticated(request);
  if (!authorization.ok()) return SetError(authorization.status(), response);
  std::string body;
  if (!ReadBody(content, options_.max_body_bytes, body, response)) return;
  absl::StatusOr<OpenAiRequest> parsed =
      ParseOpenAiRequest(body, chat ? Endpoint::kChatCompletions : Endpoint::kCompletions,
                         options_.default_policy, options_.tool_format);
  if (!parsed.ok()) return SetError(parsed.status(), response);
  if (absl::Status model = CheckModel(parsed->model); !model.ok()) {
    return SetError(model, response);
  }
  for (const arbor::v1::GenerateRequest& choice : parsed->choices) {
    if (!FitsAJob(choice, response)) return;
  }
  if (options_.tenant_room != nullptr) {
    if (absl::Status room = options_.tenant_room(*authorization, parsed->choices); !room.ok()) {
      return SetError(room, response);
    }
  }
  AnswerCompletion(generation_.get(), *std::move(parsed), options_.model_id, *authorization,
                   request, response);
}

absl::Status HttpGateway::CheckModel(const std::string& name) const {
  if (name.empty() || ServesModel(name)) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("model: '", name,
                                          "' is not served here; this server serves '",
                                          options_.model_id, "' (GET /v1/models)"));
}

// Tokenize and detokenize answer through Generation.Tokenize and .Detokenize, after the token
// and within the body limit as completions are, so they count exactly what a job would run.
void HttpGateway::Tokenize(const httplib::Request& request, const httplib::ContentReader& content,
                           httplib::Response& response) {
  absl::StatusOr<std::string> authorization = Authenticated(request);
  if (!authorization.ok()) return SetError(authorization.status(), response);
  std::string body;
  if (!ReadBody(content, options_.max_body_bytes, body, response)) return;
  absl::StatusOr<TokenizeBody> parsed = ParseTokenizeBody(body);
  if (!parsed.ok()) return SetError(parsed.status(), response);
  if (absl::Status model = CheckModel(parsed->model); !model.ok()) {
    return SetError(model, response);
  }
  if (!FitsAJob(parsed->prompt, response)) return;
  arbor::v1::TokenizeResponse tokens;
  const grpc::Status status =
      generation_->Tokenize(CallerContext(*authorization).get(), parsed->prompt, &tokens);
  if (!status.ok()) return SetError(rpc::FromGrpcStatus(status), response);
  response.set_content(TokenizeAnswer(tokens), "application/json");
}

void HttpGateway::Detokenize(const httplib::Request& request,
                             const httplib::ContentReader& content, httplib::Response& response) {
  absl::StatusOr<std::string> authorization = Authenticated(request);
  if (!authorization.ok()) return SetError(authorization.status(), response);
  std::string body;
  if (!ReadBody(content, options_.max_body_bytes, body, response)) return;
  absl::StatusOr<DetokenizeBody> parsed = ParseDetokenizeBody(body);
  if (!parsed.ok()) return SetError(parsed.status(), response);
  if (absl::Status model = CheckModel(parsed->model); !model.ok()) {
    return SetError(model, response);
  }
  arbor::v1::DetokenizeResponse text;
  const grpc::Status status =
      generation_->Detokenize(CallerContext(*authorization).get(), parsed->tokens, &text);
  if (!status.ok()) return SetError(rpc::FromGrpcStatus(status), response);
  response.set_content(DetokenizeAnswer(text), "application/json");
}

absl::StatusOr<std::string> HttpGateway::Authenticated(const httplib::Request& request) const {
  absl::StatusOr<std::string> authorization = Authorization(request);
  if (!authorization.ok() || options_.authenticator == nullptr) return authorization;
  const absl::StatusOr<rpc::Identity> caller = options_.authenticator->Authenticate(*authorization);
  if (!caller.ok()) return caller.status();
  return authorization;
}

bool HttpGateway::ServesModel(const std::string& name) const {
  if (absl::EqualsIgnoreCase(name, options_.model_id)) return true;
  for (const std::string& alias : options_.model_aliases) {
    if (absl::EqualsIgnoreCase(name, alias)) return true;
  }
  return false;
}

absl::StatusOr<arbor::v1::ListWorkersResponse> HttpGateway::Workers() const {
  arbor::v1::ListWorkersResponse workers;
  std::unique_ptr<grpc::ClientContext> context = UnaryContext();
  if (!options_.cluster_internal_key.empty()) {
    context->AddMetadata(rpc::kInternalKeyHeader, options_.cluster_internal_key);
  }
  const grpc::Status status =
      cluster_->ListWorkers(context.get(), arbor::v1::ListWorkersRequest(), &workers);
  if (!status.ok()) return rpc::FromGrpcStatus(status);
  return workers;
}

// max_model_len: the longest sequence (prompt and completion) every ready worker holds, so a
// client sizing its requests by it fits wherever the job is placed; null while none is ready.
void HttpGateway::Models(httplib::Response& response) {
  absl::StatusOr<arbor::v1::ListWorkersResponse> workers = Workers();
  if (!workers.ok()) return SetError(workers.status(), response);
  PlainJson max_model_len = nullptr;
  for (const arbor::v1::WorkerStatus& w : workers->workers()) {
    const int32_t context = w.info().model().max_context();
    if (w.state() != arbor::v1::WORKER_STATE_READY || context <= 0) continue;
    if (max_model_len.is_null() || context < max_model_len.get<int32_t>()) {
      max_model_len = context;
    }
  }
  SetJson({{"object", "list"},
           {"data", PlainJson::array({{{"id", options_.model_id},
                                       {"object", "model"},
                                       {"created", started_unix_s_},
                                       {"owned_by", "arbor"},
                                       {"max_model_len", max_model_len}}})}},
          response);
}

// Ready when at least one worker can take a job and the job store (if any) answers: what a
// load balancer needs to know.
void HttpGateway::Health(httplib::Response& response) {
  if (options_.store_health) {
    if (absl::Status store = options_.store_health(); !store.ok()) {
      return SetError(store, response);
    }
  }
  absl::StatusOr<arbor::v1::ListWorkersResponse> workers = Workers();
  if (!workers.ok()) return SetError(workers.status(), response);
  int ready = 0;
  for (const arbor::v1::WorkerStatus& w : workers->workers()) {
    ready += w.state() == arbor::v1::WORKER_STATE_READY;
  }
  if (ready == 0) {
    return SetError(absl::UnavailableError("no worker is ready (arbor workers lists them)"),
                    response);
  }
  SetJson({{"status", "ok"}, {"workers_ready", ready}, {"workers", workers->workers_size()}},
          response);
}

// Query: state (comma-separated), tag (exact client_tag), owner, model, created_after_ms,
// created_before_ms (Unix ms) and limit, as ListJobsRequest has them.
void HttpGateway::Jobs(const httplib::Request& request, httplib::Response& response) {
  absl::StatusOr<std::unique_ptr<grpc::ClientContext>> context = CallerContext(request);
  if (!context.ok()) return SetError(context.status(), response);
  arbor::v1::ListJobsRequest list;
  if (absl::Status states = ParseStates(request.get_param_value("state"), list); !states.ok()) {
    return SetError(states, response);
  }
  list.set_client_tag(request.get_param_value("tag"));
  list.set_owner(request.get_param_value("owner"));
  list.set_model(request.get_param_value("model"));
  for (const char* key : {"limit", "created_after_ms", "created_before_ms"}) {
    int64_t value = 0;
    const bool limit = std::string(key) == "limit";
    if (request.has_param(key) && (!absl::SimpleAtoi(request.get_param_value(key), &value) ||
                                   (limit && value != static_cast<int32_t>(value)))) {
      return SetError(absl::InvalidArgumentError(absl::StrCat(key, ": must be an integer")),
                      response);
    }
    if (limit) {
      list.set_limit(static_cast<int32_t>(value));
    } else {
      std::string(key) == "created_after_ms" ? list.set_created_after_unix_ms(value)
                                             : list.set_created_before_unix_ms(value);
    }
  }
  arbor::v1::ListJobsResponse jobs;
  const grpc::Status status = generation_->ListJobs(context->get(), list, &jobs);
  if (!status.ok()) return SetError(rpc::FromGrpcStatus(status), response);
  SetProtoJson(jobs, response);
}

void HttpGateway::Job(const httplib::Request& request, const std::string& id,
                      httplib::Response& response) {
  absl::StatusOr<std::unique_ptr<grpc::ClientContext>> context = CallerContext(request);
  if (!context.ok()) return SetError(context.status(), response);
  arbor::v1::JobRef ref;
  ref.set_job_id(id);
  arbor::v1::Job job;
  const grpc::Status status = generation_->GetJob(context->get(), ref, &job);
  if (!status.ok()) return SetError(rpc::FromGrpcStatus(status), response);
  SetProtoJson(job, response);
}

// Runs the job's request again, with the body's {"policy": {...}} over its own policy when given,
// and compares the trees (Generation.Replay); answers once the replay has finished, however
// long the job takes.
void HttpGateway::Replay(const httplib::Request& request, const std::string& id,
                         const httplib::ContentReader& content, httplib::Response& response) {
  absl::StatusOr<std::string> authorization = Authenticated(request);
  if (!authorization.ok()) return SetError(authorization.status(), response);
  std::string body;
  if (!ReadBody(content, options_.max_body_bytes, body, response)) return;
  absl::StatusOr<arbor::v1::ReplayRequest> replay = ParseReplayBody(id, body);
  if (!replay.ok()) return SetError(replay.status(), response);
  std::unique_ptr<grpc::ClientContext> context = CallerContext(*authorization);
  context->set_deadline(std::chrono::system_clock::time_point::max());
  arbor::v1::ReplayResult result;
  const grpc::Status status = generation_->Replay(context.get(), *replay, &result);
  if (!status.ok()) return SetError(rpc::FromGrpcStatus(status), response);
  SetProtoJson(result, response);
}

// Query: root (node id), max_depth, top_logprobs (true/1), as GetTreeRequest has them.
void HttpGateway::Tree(const httplib::Request& request, const std::string& id,
                       httplib::Response& response) {
  absl::StatusOr<std::unique_ptr<grpc::ClientContext>> context = CallerContext(request);
  if (!context.ok()) return SetError(context.status(), response);
  arbor::v1::GetTreeRequest tree_request;
  tree_request.set_job_id(id);
  for (const char* key : {"root", "max_depth"}) {
    if (!request.has_param(key)) continue;
    int value = 0;
    if (!absl::SimpleAtoi(request.get_param_value(key), &value)) {
      return SetError(absl::InvalidArgumentError(absl::StrCat(key, ": must be an integer")),
                      response);
    }
    std::string(key) == "root" ? tree_request.set_root(value) : tree_request.set_max_depth(value);
  }
  const std::string top = request.get_param_value("top_logprobs");
  tree_request.set_include_top_logprobs(top == "true" || top == "1");
  arbor::v1::Tree tree;
  const grpc::Status status = generation_->GetTree(context->get(), tree_request, &tree);
  if (!status.ok()) return SetError(rpc::FromGrpcStatus(status), response);
  response.set_content(views::TreeToJson(tree, /*indent=*/-1), "application/json");
}

}  // namespace arbor::coordinator::http
