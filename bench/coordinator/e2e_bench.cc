// End-to-end load benchmark of the whole service: a coordinator and one worker started as real
// processes on loopback (tools::LocalCluster) on a make-model checkpoint (tiny), driven through the
// public Generation API only. For SEARCH and CANONICAL policy modes, at concurrency 1, 16 and 64
// it reports jobs/s, committed tokens/s, time to first token (p50/p95, seen by the client) and
// the coordinator's share of each job: wall time outside worker Run calls per committed token.
//
// Against that, in the same run and on the same worker, it times the worker's own work for the
// same job shape with direct Worker.Run calls (the prompt the coordinator sent, 64 steps, the
// same policy mode): RunTimings says how long the worker itself spent, and the client-side round
// trip minus that is the RPC cost of one Run call. Timings.worker_us is measured by the
// coordinator around each Run call, so it contains that RPC cost; the direct calls separate it.
//
// `--preset=NAME` picks the make-model preset (default tiny; small has ~10× the per-token cost,
// so fixed per-Run costs weigh a tenth as much). Other arguments are passed to the coordinator
// as flags (e.g. --first_run_steps=64 for one Run per job), to compare its settings.
//
// Bounded: a fixed number of jobs per case (kJobsPerSlot × concurrency, at least kMinJobs), every
// job exactly kMaxTokens tokens (eos ignored), so the whole run takes well under two minutes.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "base/process_defaults.h"
#include "model/make_model.h"
#include "rpc/security.h"
#include "tools/local_cluster.h"

ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_ca);

namespace arbor::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxTokens = 64;   // Also the coordinator's default --steps_per_run.
constexpr int kJobsPerSlot = 2;  // Jobs per case = kJobsPerSlot × concurrency...
constexpr int kMinJobs = 16;     // ...but at least this many, for stable percentiles.
constexpr int kWarmupJobs = 4;
constexpr int kPairs = 16;  // Jobs alone, each paired with a direct Worker.Run.
constexpr int kConcurrency[] = {1, 16, 64};
constexpr char kPrompt[] = "Once upon a time, in a quiet valley between two rivers,";
// Sequence ids of the direct Worker.Run calls, far above the coordinator's own.
constexpr uint64_t kDirectSequenceBase = uint64_t{1} << 62;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// The value at fraction `q` of the sorted samples (nearest rank).
double Percentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t rank = static_cast<size_t>(q * static_cast<double>(samples.size() - 1) + 0.5);
  return samples[std::min(rank, samples.size() - 1)];
}

double Mean(const std::vector<double>& samples) {
  double sum = 0;
  for (double s : samples) sum += s;
  return samples.empty() ? 0 : sum / static_cast<double>(samples.size());
}

const char* ModeName(v1::PolicyMode mode) {
  return mode == v1::POLICY_MODE_CANONICAL ? "CANONICAL" : "SEARCH";
}

v1::GenerateRequest JobRequest(v1::PolicyMode mode, uint64_t seed) {
  v1::GenerateRequest request;
  request.set_text(kPrompt);
  request.set_max_tokens(kMaxTokens);
  request.set_seed(seed);
  request.mutable_policy()->set_mode(mode);
  request.mutable_stop()->set_ignore_eos(true);
  return request;
}

// What the client saw of one Generate call.
struct JobResult {
  std::string job_id;
  double first_token_us = 0;  // Call start → first TokenEvent received.
  v1::FinishedEvent finished;
};

absl::StatusOr<JobResult> RunJob(v1::Generation::Stub& stub, const v1::GenerateRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  JobResult result;
  const Clock::time_point start = Clock::now();
  std::unique_ptr<grpc::ClientReader<v1::GenerateEvent>> reader = stub.Generate(&context, request);
  v1::GenerateEvent event;
  bool finished = false;
  while (reader->Read(&event)) {
    if (result.job_id.empty()) result.job_id = event.job_id();
    if (event.has_token() && result.first_token_us == 0) {
      result.first_token_us = Micros(Clock::now() - start);
    }
    if (event.has_finished()) {
      result.finished = event.finished();
      finished = true;
    }
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("Generate: ", status.error_message()));
  }
  if (!finished || result.finished.reason() != v1::FINISH_REASON_MAX_TOKENS) {
    return absl::InternalError(absl::StrCat("job ", result.job_id, " ended with reason ",
                                            result.finished.reason(), ": ",
                                            result.finished.error()));
  }
  return result;
}

// `jobs` Generate calls from `concurrency` client threads, each taking the next job when its
// previous one finished.
absl::StatusOr<std::vector<JobResult>> RunJobs(v1::Generation::Stub& stub, v1::PolicyMode mode,
                                               int concurrency, int jobs, double* wall_s) {
  std::vector<std::optional<absl::StatusOr<JobResult>>> results(jobs);
  std::atomic<int> next{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < jobs; i = next++) {
        results[i] = RunJob(stub, JobRequest(mode, 1000 + static_cast<uint64_t>(i)));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  *wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<JobResult> done;
  for (auto& result : results) {
    if (!result->ok()) return result->status();
    done.push_back(**std::move(result));
  }
  return done;
}

// Sums over direct Worker.Run calls of the job shape, with the worker's own time per call.
struct WorkerCost {
  int calls = 0;
  int64_t steps = 0;         // Tokens decoded.
  int64_t decode_steps = 0;  // Forward steps that only decoded.
  double own_us = 0;         // prefill_us + decode_us: forward, metrics, policy, sampling.
  double decode_us = 0;
  double beyond_us = 0;  // Client round trip − (queue_us + prefill_us + decode_us).
  double health_us = 0;  // Round trips of the empty Health call: bare gRPC on loopback.
};

// One Run of a new sequence on `prompt` for kMaxTokens steps (structural decisions taken as
// their fallback samples, so it decodes every step), then its Release and one Health call.
absl::Status DirectRun(v1::Worker::Stub& stub, const std::vector<int32_t>& prompt,
                       v1::PolicyMode mode, uint64_t sequence_id, WorkerCost* cost) {
  v1::RunRequest request;
  v1::RunItem* item = request.add_items();
  item->set_sequence_id(sequence_id);
  item->mutable_append()->Add(prompt.begin(), prompt.end());
  item->set_max_steps(kMaxTokens);
  item->mutable_policy()->set_mode(mode);
  item->mutable_stop()->set_ignore_eos(true);
  item->set_seed(sequence_id);
  v1::RunResponse response;
  grpc::ClientContext context;
  Clock::time_point start = Clock::now();
  const grpc::Status status = stub.Run(&context, request, &response);
  const double round_trip_us = Micros(Clock::now() - start);
  if (!status.ok()) return absl::UnavailableError("Run: " + status.error_message());
  const v1::RunTimings& t = response.timings();
  ++cost->calls;
  cost->steps += response.results(0).steps_size();
  // The prompt fits one forward step (far below --max_batch_tokens): every other step decodes.
  cost->decode_steps += t.forward_steps() - 1;
  cost->own_us += static_cast<double>(t.prefill_us() + t.decode_us());
  cost->decode_us += static_cast<double>(t.decode_us());
  cost->beyond_us +=
      round_trip_us - static_cast<double>(t.queue_us() + t.prefill_us() + t.decode_us());
  v1::ReleaseRequest release;
  release.add_sequence_ids(sequence_id);
  v1::ReleaseResponse released;
  grpc::ClientContext release_context;
  if (!stub.Release(&release_context, release, &released).ok()) {
    return absl::UnavailableError("Release failed");
  }
  v1::HealthResponse health;
  grpc::ClientContext health_context;
  start = Clock::now();
  if (!stub.Health(&health_context, v1::HealthRequest(), &health).ok()) {
    return absl::UnavailableError("Health failed");
  }
  cost->health_us += Micros(Clock::now() - start);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> PromptTokens(v1::Generation::Stub& stub,
                                                  const std::string& job_id) {
  grpc::ClientContext context;
  v1::GetTreeRequest request;
  request.set_job_id(job_id);
  request.set_max_depth(1);
  v1::Tree tree;
  const grpc::Status status = stub.GetTree(&context, request, &tree);
  if (!status.ok()) return absl::UnavailableError("GetTree: " + status.error_message());
  return std::vector<int32_t>(tree.prompt_token_ids().begin(), tree.prompt_token_ids().end());
}

// Per committed token of a job, from its FinishedEvent.
double PerToken(int64_t us, const JobResult& job) {
  return static_cast<double>(us) / job.finished.usage().generated_tokens();
}

// Jobs alone on the worker, each followed by a direct Run of the same shape, so that both see
// the same machine load: where a job's time goes, against the worker's own time per token.
absl::Status MeasureAlone(v1::Generation::Stub& stub, v1::Worker::Stub& worker, v1::PolicyMode mode,
                          double* own_us_per_token) {
  double wall_s = 0;
  absl::StatusOr<std::vector<JobResult>> warmup = RunJobs(stub, mode, 1, kWarmupJobs, &wall_s);
  if (!warmup.ok()) return warmup.status();
  absl::StatusOr<std::vector<int32_t>> prompt = PromptTokens(stub, warmup->front().job_id);
  if (!prompt.ok()) return prompt.status();
  WorkerCost cost;
  std::vector<double> total, inside, outside;
  for (int i = 0; i < kPairs; ++i) {
    absl::StatusOr<JobResult> job = RunJob(stub, JobRequest(mode, 1000 + i));
    if (!job.ok()) return job.status();
    const v1::Timings& t = job->finished.timings();
    total.push_back(PerToken(t.total_us(), *job));
    inside.push_back(PerToken(t.worker_us(), *job));
    outside.push_back(PerToken(t.total_us() - t.worker_us(), *job));
    const uint64_t sequence_id = kDirectSequenceBase + static_cast<uint64_t>(mode) * kPairs + i;
    if (absl::Status status = DirectRun(worker, *prompt, mode, sequence_id, &cost); !status.ok()) {
      return status;
    }
  }
  const double own = cost.own_us / static_cast<double>(cost.steps);
  *own_us_per_token = own;
  const double rest = Mean(total) - own;
  std::printf(
      "\n%s alone (%d jobs of %d tokens, prompt %zu tokens, each job followed by a direct Run "
      "of the same shape):\n"
      "  worker's own time per token %.1f µs (decode step %.1f µs)\n"
      "  job total_us per committed token %.1f µs: inside Run calls (worker_us) %.1f, outside "
      "%.1f (%.1f %% of worker own)\n"
      "  job total − worker own per committed token %.1f µs (%.1f %% of worker own)\n"
      "  direct Run round trip beyond the worker's own time %.0f µs per call; bare Health round "
      "trip %.0f µs\n",
      ModeName(mode), kPairs, kMaxTokens, prompt->size(), own,
      cost.decode_us / static_cast<double>(cost.decode_steps), Mean(total), Mean(inside),
      Mean(outside), 100 * Mean(outside) / own, rest, 100 * rest / own, cost.beyond_us / cost.calls,
      cost.health_us / cost.calls);
  return absl::OkStatus();
}

// Throughput and time to first token under load, with the coordinator's time outside Run calls.
absl::Status MeasureLoad(v1::Generation::Stub& stub, v1::PolicyMode mode, double own_us_per_token) {
  for (int concurrency : kConcurrency) {
    const int jobs = std::max(kMinJobs, kJobsPerSlot * concurrency);
    double wall_s = 0;
    absl::StatusOr<std::vector<JobResult>> results =
        RunJobs(stub, mode, concurrency, jobs, &wall_s);
    if (!results.ok()) return results.status();
    std::vector<double> ttft, outside, explored, structural;
    int64_t committed = 0;
    for (const JobResult& r : *results) {
      const v1::Timings& t = r.finished.timings();
      const v1::StrategyCounts& counts = r.finished.strategies();
      committed += r.finished.usage().generated_tokens();
      ttft.push_back(r.first_token_us / 1e3);
      outside.push_back(PerToken(t.total_us() - t.worker_us(), r));
      explored.push_back(r.finished.usage().explored_tokens());
      structural.push_back(counts.branch() + counts.insert() + counts.backspace());
    }
    std::printf("| %s | %d | %d | %.1f | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f %% |\n",
                ModeName(mode), concurrency, jobs, jobs / wall_s, committed / wall_s,
                Mean(explored), Mean(structural), Percentile(ttft, 0.5), Percentile(ttft, 0.95),
                Mean(outside), 100 * Mean(outside) / own_us_per_token);
  }
  return absl::OkStatus();
}

absl::Status Bench(v1::Generation::Stub& stub, v1::Worker::Stub& worker) {
  constexpr v1::PolicyMode kModes[] = {v1::POLICY_MODE_SEARCH, v1::POLICY_MODE_CANONICAL};
  double own_us_per_token[2] = {0, 0};
  for (int m = 0; m < 2; ++m) {
    if (absl::Status status = MeasureAlone(stub, worker, kModes[m], &own_us_per_token[m]);
        !status.ok()) {
      return status;
    }
  }
  std::printf(
      "\n| mode | concurrency | jobs | jobs/s | committed tok/s | explored tok/job | "
      "branch+insert+backspace/job | TTFT p50 ms | TTFT p95 ms | outside Run µs/tok | "
      "outside Run / worker own |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int m = 0; m < 2; ++m) {
    if (absl::Status status = MeasureLoad(stub, kModes[m], own_us_per_token[m]); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

// The --tls_* flags of process `name` for certificates made by scripts/make-certs.sh in `dir`.
std::vector<std::string> TlsFlags(const std::string& dir, const std::string& name) {
  return {absl::StrCat("--tls_cert=", dir, "/", name, ".pem"),
          absl::StrCat("--tls_key=", dir, "/", name, ".key"),
          absl::StrCat("--tls_ca=", dir, "/ca.pem")};
}

// This process dials over mutual TLS as `client` (its channels, and LocalCluster's health
// checks, take rpc::ProcessSecurity()).
absl::Status UseClientCertificate(const std::string& dir) {
  absl::SetFlag(&FLAGS_tls_cert, dir + "/client.pem");
  absl::SetFlag(&FLAGS_tls_key, dir + "/client.key");
  absl::SetFlag(&FLAGS_tls_ca, dir + "/ca.pem");
  return rpc::InitSecurity();
}

// Args: --preset=NAME (default tiny), --tls=DIR (mutual TLS everywhere with the certificates
// scripts/make-certs.sh made in DIR: coordinator, worker, client), anything else goes to the
// coordinator.
int Main(std::vector<std::string> args) {
  std::string preset = "tiny";
  std::string tls;
  std::vector<std::string> coordinator_flags;
  constexpr absl::string_view kPreset = "--preset=";
  constexpr absl::string_view kTls = "--tls=";
  for (std::string& arg : args) {
    if (absl::StartsWith(arg, kPreset)) {
      preset = arg.substr(kPreset.size());
    } else if (absl::StartsWith(arg, kTls)) {
      tls = arg.substr(kTls.size());
    } else {
      coordinator_flags.push_back(std::move(arg));
    }
  }
  std::vector<std::string> worker_flags;
  if (!tls.empty()) {
    if (absl::Status s = UseClientCertificate(tls); !s.ok()) {
      std::fprintf(stderr, "arbor-bench-e2e: --tls: %s\n", s.ToString().c_str());
      return 2;
    }
    for (std::string& flag : TlsFlags(tls, "coordinator")) coordinator_flags.push_back(flag);
    worker_flags = TlsFlags(tls, "worker");
    std::printf("mutual TLS between every process (certificates in %s)\n", tls.c_str());
  }
  char dir_template[] = "/tmp/arbor-bench-e2e-XXXXXX";
  const char* tmp = mkdtemp(dir_template);
  if (tmp == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmp;
  model::MakeModelOptions model;
  model.preset = preset;
  model.out_dir = dir + "/" + preset;
  model.seed = 1;
  absl::StatusOr<model::ModelConfig> config = model::MakeModel(model);
  absl::Status status = config.status();
  if (status.ok()) {
    tools::LocalClusterOptions options;
    options.bin_dir = tools::SelfDir();
    options.work_dir = dir + "/cluster";
    options.model = model.out_dir;
    options.num_workers = 1;
    options.coordinator_flags = std::move(coordinator_flags);
    options.worker_flags = std::move(worker_flags);
    absl::StatusOr<std::unique_ptr<tools::LocalCluster>> cluster =
        tools::LocalCluster::Start(options);
    status = cluster.status();
    if (status.ok()) {
      auto stub =
          v1::Generation::NewStub(rpc::ProcessSecurity().Dial((*cluster)->coordinator_address()));
      auto worker =
          v1::Worker::NewStub(rpc::ProcessSecurity().Dial((*cluster)->worker_addresses().front()));
      status = Bench(*stub, *worker);
      const absl::Status stopped = (*cluster)->Stop(absl::Seconds(10));
      if (status.ok()) status = stopped;
    }
  }
  if (!status.ok()) {
    // Kept for the processes' logs.
    std::fprintf(stderr, "arbor-bench-e2e: %s (logs in %s/cluster)\n", status.ToString().c_str(),
                 dir.c_str());
    return 1;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return 0;
}

}  // namespace
}  // namespace arbor::bench

int main(int argc, char** argv) {
  arbor::base::ApplyProcessDefaults();
  return arbor::bench::Main(std::vector<std::string>(argv + 1, argv + argc));
}
