// What the OpenAI-compatible HTTP stream costs beside the gRPC stream, on the same jobs: a
// coordinator (with --http_listen) and one worker as real processes on loopback (tiny
// checkpoint), identical jobs (same prompt, seed and policy, exactly kMaxTokens tokens) run
// alternately through Generation.Generate and POST /v1/completions with stream: true.
//
// Reported per transport: time to the first token the client can show, time to the end of the
// stream, and the difference per token (the gateway's JSON, SSE framing and its in-process
// gRPC hop). HTTP shows a token one token later by design (a token is final only once the next
// one arrives; docs/HTTP.md), which the time-to-first-token difference includes.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "base/process_defaults.h"
#include "httplib.h"
#include "model/make_model.h"
#include "nlohmann/json.hpp"
#include "tools/local_cluster.h"

namespace arbor::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxTokens = 128;
constexpr int kPairs = 24;
constexpr int kConcurrency = 8;
constexpr char kPrompt[] = "Once upon a time, in a quiet valley between two rivers,";

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Timing {
  double first_us = 0;  // Call start → first token the client may show.
  double total_us = 0;  // Call start → end of stream.
  int tokens = 0;
};

Timing ViaGrpc(v1::Generation::Stub& stub, uint64_t seed) {
  v1::GenerateRequest request;
  request.set_text(kPrompt);
  request.set_max_tokens(kMaxTokens);
  request.set_seed(seed);
  request.mutable_policy()->set_mode(v1::POLICY_MODE_CANONICAL);
  request.mutable_stop()->set_ignore_eos(true);
  grpc::ClientContext context;
  Timing t;
  const Clock::time_point start = Clock::now();
  auto reader = stub.Generate(&context, request);
  v1::GenerateEvent event;
  while (reader->Read(&event)) {
    if (!event.has_token()) continue;
    if (t.tokens++ == 0) t.first_us = Micros(Clock::now() - start);
  }
  if (!reader->Finish().ok()) std::fprintf(stderr, "gRPC job failed\n");
  t.total_us = Micros(Clock::now() - start);
  return t;
}

Timing ViaHttp(const std::string& host, int port, uint64_t seed) {
  httplib::Client client(host, port);
  client.set_read_timeout(60, 0);
  const nlohmann::json body = {
      {"prompt", kPrompt},
      {"max_tokens", kMaxTokens},
      {"seed", seed},
      {"stream", true},
      {"arbor", {{"policy", {{"mode", "POLICY_MODE_CANONICAL"}}}, {"ignore_eos", true}}}};
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  request.body = body.dump();
  request.set_header("Content-Type", "application/json");
  Timing t;
  std::string buffer;
  const Clock::time_point start = Clock::now();
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    buffer.append(data, size);
    for (size_t end; (end = buffer.find("\n\n")) != std::string::npos; buffer.erase(0, end + 2)) {
      const std::string frame = buffer.substr(0, end);
      if (!absl::StartsWith(frame, "data: {")) continue;
      const nlohmann::json chunk = nlohmann::json::parse(frame.substr(6));
      if (chunk["choices"].empty() || chunk["choices"][0]["text"] == "") continue;
      if (t.tokens++ == 0) t.first_us = Micros(Clock::now() - start);
    }
    return true;
  };
  const httplib::Result result = client.send(request);
  if (!result || result->status != 200) std::fprintf(stderr, "HTTP job failed\n");
  t.total_us = Micros(Clock::now() - start);
  return t;
}

// `kConcurrency` clients, each running its share of `jobs` one after another.
double Concurrent(int jobs, const std::function<void(int)>& run) {
  std::atomic<int> next{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < kConcurrency; ++c) {
    threads.emplace_back([&] {
      for (int i = next++; i < jobs; i = next++) run(i);
    });
  }
  for (std::thread& t : threads) t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Main() {
  const std::string dir =
      absl::StrCat(std::filesystem::temp_directory_path().string(), "/arbor-bench-http-", getpid());
  model::MakeModelOptions model;
  model.preset = "tiny";
  model.out_dir = dir + "/tiny";
  model.seed = 1;
  if (absl::Status made = model::MakeModel(model).status(); !made.ok()) {
    std::fprintf(stderr, "%s\n", made.ToString().c_str());
    return 1;
  }
  tools::LocalClusterOptions options;
  options.bin_dir = tools::SelfDir();
  options.work_dir = dir + "/cluster";
  options.model = model.out_dir;
  options.http_port = 0;
  absl::StatusOr<std::unique_ptr<tools::LocalCluster>> cluster =
      tools::LocalCluster::Start(options);
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.status().ToString().c_str());
    return 1;
  }
  const std::string http = (*cluster)->http_address();
  const std::string host = http.substr(0, http.rfind(':'));
  const int port = std::stoi(http.substr(http.rfind(':') + 1));
  auto stub = v1::Generation::NewStub(
      grpc::CreateChannel((*cluster)->coordinator_address(), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 4; ++i) {  // Warm-up: connections, caches, the worker's prefix cache.
    ViaGrpc(*stub, 1 + i);
    ViaHttp(host, port, 1 + i);
  }
  std::vector<double> grpc_first, http_first, grpc_total, http_total, per_token;
  for (int i = 0; i < kPairs; ++i) {  // Alternating, so both see the same machine load.
    const Timing g = ViaGrpc(*stub, 100 + i);
    const Timing h = ViaHttp(host, port, 100 + i);
    grpc_first.push_back(g.first_us);
    http_first.push_back(h.first_us);
    grpc_total.push_back(g.total_us);
    http_total.push_back(h.total_us);
    per_token.push_back((h.total_us - g.total_us) / kMaxTokens);
  }
  std::printf("HTTP SSE vs gRPC stream: %d-token jobs on tiny, %d alternating pairs (medians)\n",
              kMaxTokens, kPairs);
  std::printf("| transport | first token | whole stream | per token |\n|---|---|---|---|\n");
  std::printf("| gRPC Generate | %.0f µs | %.0f µs | %.1f µs |\n", Median(grpc_first),
              Median(grpc_total), Median(grpc_total) / kMaxTokens);
  std::printf("| HTTP /v1/completions | %.0f µs | %.0f µs | %.1f µs |\n", Median(http_first),
              Median(http_total), Median(http_total) / kMaxTokens);
  std::printf("HTTP − gRPC per token (median of pairs): %.1f µs\n", Median(per_token));
  const int jobs = 4 * kConcurrency;
  const double grpc_s = Concurrent(jobs, [&](int i) { ViaGrpc(*stub, 500 + i); });
  const double http_s = Concurrent(jobs, [&](int i) { ViaHttp(host, port, 500 + i); });
  std::printf("concurrency %d, %d jobs: gRPC %.0f tok/s, HTTP %.0f tok/s (HTTP/gRPC %.2f)\n",
              kConcurrency, jobs, jobs * kMaxTokens / grpc_s, jobs * kMaxTokens / http_s,
              grpc_s / http_s);
  (*cluster)->Stop(absl::Seconds(10)).IgnoreError();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace arbor::bench

int main() {
  arbor::base::ApplyProcessDefaults();
  return arbor::bench::Main();
}
