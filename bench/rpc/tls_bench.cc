// arbor-bench-tls: what TLS costs per token on Arbor's gRPC hops, plaintext against mutual TLS
// on loopback in one run. A client streams GenerateEvents (one per token, as Generate and Watch
// send them) and makes unary calls (as the coordinator's Runs and heartbeats are), from a server
// in this process; certificates come from scripts/make-certs.sh, made at start in a temporary
// folder. docs/PERFORMANCE.md, "TLS on the wire".
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "rpc/security.h"
#include "rpc/server.h"

ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_ca);

namespace arbor::bench {
namespace {

// Generate streams request.max_tokens token events of a typical size; GetJob answers at once.
class Streamer final : public v1::Generation::Service {
 public:
  grpc::Status Generate(grpc::ServerContext*, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateEvent>* writer) override {
    v1::GenerateEvent event;
    event.set_job_id("j1-0123abcd");
    v1::TokenEvent* token = event.mutable_token();
    token->set_text(" token");
    token->set_strategy(v1::STRATEGY_ADAPTIVE);
    token->set_logprob(-0.25f);
    v1::Metrics* m = token->mutable_metrics();
    m->set_entropy(1.5f);
    m->set_varentropy(2.5f);
    m->set_attn_entropy(3.1f);
    m->set_attn_varentropy(0.4f);
    m->set_agreement(0.03f);
    m->set_interaction_strength(2.7f);
    for (int i = 0; i < request->max_tokens(); ++i) {
      token->set_node_id(i + 1);
      token->set_token_id(1000 + i);
      token->set_position(30 + i);
      event.set_time_us(i);
      if (!writer->Write(event)) break;
    }
    return grpc::Status::OK;
  }
  grpc::Status GetJob(grpc::ServerContext*, const v1::JobRef* ref, v1::Job* job) override {
    job->set_job_id(ref->job_id());
    return grpc::Status::OK;
  }
};

struct Endpoint {
  rpc::Security security;
  Streamer service;
  std::unique_ptr<rpc::Server> server;
  std::unique_ptr<v1::Generation::Stub> stub;
};

std::string CertDir() {
  static const std::string dir = [] {
    const std::string d = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                       "/arbor-bench-tls-", getpid());
    const std::string command =
        absl::StrCat(ARBOR_SOURCE_DIR, "/scripts/make-certs.sh ", d, " peer >/dev/null");
    if (std::system(command.c_str()) != 0) std::abort();
    return d;
  }();
  return dir;
}

// One server and client per mode, made once: the benchmarks time calls, not handshakes.
Endpoint& Get(bool tls) {
  static Endpoint* endpoints[2] = {nullptr, nullptr};
  Endpoint*& e = endpoints[tls];
  if (e != nullptr) return *e;
  e = new Endpoint;
  if (tls) {
    absl::SetFlag(&FLAGS_tls_cert, CertDir() + "/peer.pem");
    absl::SetFlag(&FLAGS_tls_key, CertDir() + "/peer.key");
    absl::SetFlag(&FLAGS_tls_ca, CertDir() + "/ca.pem");
    e->security = *rpc::Security::FromFlags();
  }
  e->server = *rpc::Server::Start("127.0.0.1:0", {&e->service},
                                  e->security.ServerCredentials(rpc::ClientCerts::kRequired));
  e->stub = v1::Generation::NewStub(e->security.Dial(e->server->address()));
  return *e;
}

// Per token of a streamed job: state.range(1) tokens per stream.
void BM_StreamedTokens(benchmark::State& state) {
  Endpoint& e = Get(state.range(0) == 1);
  v1::GenerateRequest request;
  request.set_max_tokens(static_cast<int>(state.range(1)));
  int64_t tokens = 0;
  for (auto _ : state) {
    grpc::ClientContext context;
    auto reader = e.stub->Generate(&context, request);
    v1::GenerateEvent event;
    while (reader->Read(&event)) ++tokens;
    if (!reader->Finish().ok()) state.SkipWithError("stream failed");
  }
  state.SetItemsProcessed(tokens);
  state.SetLabel(state.range(0) == 1 ? "mutual TLS" : "plaintext");
}
BENCHMARK(BM_StreamedTokens)->ArgsProduct({{0, 1}, {256}})->UseRealTime();

void BM_UnaryRoundTrip(benchmark::State& state) {
  Endpoint& e = Get(state.range(0) == 1);
  v1::JobRef ref;
  ref.set_job_id("j1-0123abcd");
  for (auto _ : state) {
    grpc::ClientContext context;
    v1::Job job;
    if (!e.stub->GetJob(&context, ref, &job).ok()) state.SkipWithError("call failed");
  }
  state.SetLabel(state.range(0) == 1 ? "mutual TLS" : "plaintext");
}
BENCHMARK(BM_UnaryRoundTrip)->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace arbor::bench

BENCHMARK_MAIN();
