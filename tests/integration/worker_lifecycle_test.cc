// Worker and coordinator lifecycles as an operator meets them, with real processes on
// loopback: a worker restarted on the same address takes the next jobs at once; a worker stopped
// with SIGTERM deregisters and its jobs finish elsewhere; the KV a crashed coordinator's jobs
// held on a worker is released (lease lapse, or re-registration under a new epoch), and a job
// whose sequences lapsed while its coordinator was unreachable is prefilled again; jobs that
// do not all fit in a worker's KV wait for room instead of failing; and the coordinator's
// readiness (grpc.health.v1 service "arbor.ready") requires a ready worker.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "arbor/v1/cluster.grpc.pb.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "base/subprocess.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "model/make_model.h"
#include "tools/local_cluster.h"

namespace arbor {
namespace {

const std::string kBin = ARBOR_BINARY_DIR "/bin";

std::string TempPath(const std::string& name) {
  return absl::StrCat(testing::TempDir(), "/worker-lifecycle-", getpid(), "-", name);
}

std::shared_ptr<grpc::Channel> Dial(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

// A coordinator and the workers registered with it (--coordinator), as processes.
class Cluster {
 public:
  Cluster(std::string model_dir, std::string name)
      : model_dir_(std::move(model_dir)), dir_(TempPath(name)) {
    std::filesystem::create_directories(dir_);
  }
  // Stops what still runs; its logs and port files go unless the test failed (kept to read).
  ~Cluster() {
    workers_.clear();
    coordinator_.reset();
    std::error_code ignored;
    if (!testing::Test::HasFailure()) std::filesystem::remove_all(dir_, ignored);
  }

  // Starts the coordinator on `listen` (port 0: any) with `flags`.
  bool StartCoordinator(const std::vector<std::string>& flags, const std::string& listen) {
    std::vector<std::string> argv = {kBin + "/arbor-coordinator", "--model=" + model_dir_,
                                     "--log_level=info"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const int n = coordinators_++;
    absl::StatusOr<base::Subprocess> process = tools::StartServer(
        argv, listen, absl::StrCat(dir_, "/coordinator", n, ".port"),
        absl::StrCat(dir_, "/coordinator", n, ".log"), absl::Seconds(30), &address_);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return false;
    coordinator_.emplace(*std::move(process));
    generation_ = v1::Generation::NewStub(Dial(address_));
    cluster_ = v1::Cluster::NewStub(Dial(address_));
    return true;
  }

  // Starts a worker that registers with the coordinator; returns its index, or -1.
  int StartWorker(const std::vector<std::string>& flags, const std::string& listen) {
    std::vector<std::string> argv = {kBin + "/arbor-worker", "--model=" + model_dir_,
                                     "--coordinator=" + address_, "--log_level=info"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const int n = static_cast<int>(workers_.size());
    std::string address;
    absl::StatusOr<base::Subprocess> process =
        tools::StartServer(argv, listen, absl::StrCat(dir_, "/worker", n, "-", starts_++, ".port"),
                           absl::StrCat(dir_, "/worker", n, ".log"), absl::Seconds(30), &address);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return -1;
    workers_.push_back(*std::move(process));
    worker_addresses_.push_back(address);
    return n;
  }

  // The coordinator with `coordinator_flags` and one worker with `worker_flags`, both on any
  // port; true once the worker is READY.
  bool StartWithOneWorker(const std::vector<std::string>& coordinator_flags,
                          const std::vector<std::string>& worker_flags) {
    return StartCoordinator(coordinator_flags, "127.0.0.1:0") &&
           StartWorker(worker_flags, "127.0.0.1:0") == 0 &&
           AwaitState(worker_address(0), v1::WORKER_STATE_READY, absl::Seconds(10));
  }

  // Restarts worker `n` (after it exited) on the address it had.
  bool RestartWorker(int n, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {kBin + "/arbor-worker", "--model=" + model_dir_,
                                     "--coordinator=" + address_, "--log_level=info"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::string address;
    absl::StatusOr<base::Subprocess> process = tools::StartServer(
        argv, worker_addresses_[n], absl::StrCat(dir_, "/worker", n, "-", starts_++, ".port"),
        absl::StrCat(dir_, "/worker", n, "-restarted.log"), absl::Seconds(30), &address);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return false;
    workers_[n] = *std::move(process);
    return true;
  }

  // The state of the worker at `address` in ListWorkers; UNSPECIFIED when not listed.
  v1::WorkerState StateOf(const std::string& address) {
    grpc::ClientContext context;
    v1::ListWorkersResponse response;
    if (!cluster_->ListWorkers(&context, {}, &response).ok()) return v1::WORKER_STATE_UNSPECIFIED;
    for (const v1::WorkerStatus& w : response.workers()) {
      if (w.address() == address) return w.state();
    }
    return v1::WORKER_STATE_UNSPECIFIED;
  }

  // Waits up to `timeout` for the worker at `address` to be in `state`.
  bool AwaitState(const std::string& address, v1::WorkerState state, absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      if (StateOf(address) == state) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  v1::HealthResponse WorkerHealth(int n) {
    auto stub = v1::Worker::NewStub(Dial(worker_addresses_[n]));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::HealthResponse health;
    EXPECT_TRUE(stub->Health(&context, {}, &health).ok());
    return health;
  }

  // Waits up to `timeout` for worker `n` to hold no sequence; returns its last count.
  int32_t AwaitNoSequences(int n, absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    int32_t live = -1;
    while (absl::Now() < end) {
      live = WorkerHealth(n).live_sequences();
      if (live == 0) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return live;
  }

  std::string Submit(const v1::GenerateRequest& request) {
    grpc::ClientContext context;
    v1::JobRef ref;
    const grpc::Status status = generation_->Submit(&context, request, &ref);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return ref.job_id();
  }

  // The finished event of the job (its stream's last event); a default one when missing, or when
  // the job has not finished within `timeout`.
  v1::FinishedEvent Finished(const std::string& job_id,
                             absl::Duration timeout = absl::Seconds(120)) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    v1::JobRef ref;
    ref.set_job_id(job_id);
    auto reader = generation_->Watch(&context, ref);
    v1::GenerateEvent event, last;
    while (reader->Read(&event)) last = event;
    const grpc::Status status = reader->Finish();
    EXPECT_TRUE(status.ok()) << job_id << ": " << status.error_message();
    EXPECT_TRUE(last.has_finished()) << job_id << ": no finished event";
    return last.finished();
  }

  v1::Job GetJob(const std::string& job_id) {
    grpc::ClientContext context;
    v1::JobRef ref;
    ref.set_job_id(job_id);
    v1::Job job;
    const grpc::Status status = generation_->GetJob(&context, ref, &job);
    EXPECT_TRUE(status.ok()) << job_id << ": " << status.error_message();
    return job;
  }

  // Waits until the job has streamed its first event.
  void AwaitFirstEvent(const std::string& job_id) {
    grpc::ClientContext context;
    v1::JobRef ref;
    ref.set_job_id(job_id);
    auto reader = generation_->Watch(&context, ref);
    v1::GenerateEvent event;
    EXPECT_TRUE(reader->Read(&event)) << job_id;
    context.TryCancel();
    reader->Finish();
  }

  // grpc.health.v1 Check of the coordinator's `service`: SERVING, NOT_SERVING, or UNKNOWN
  // when the call failed.
  grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& service) {
    auto stub = grpc::health::v1::Health::NewStub(Dial(address_));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    if (!stub->Check(&context, request, &response).ok()) {
      return grpc::health::v1::HealthCheckResponse::UNKNOWN;
    }
    return response.status();
  }

  // Waits up to `timeout` for the coordinator's "arbor.ready" to report `status`.
  bool AwaitReady(grpc::health::v1::HealthCheckResponse::ServingStatus status,
                  absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      if (Health("arbor.ready") == status) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  base::Subprocess& coordinator() { return *coordinator_; }
  base::Subprocess& worker(int n) { return workers_[n]; }
  const std::string& worker_address(int n) const { return worker_addresses_[n]; }
  const std::string& address() const { return address_; }

 private:
  const std::string model_dir_;
  const std::string dir_;
  std::optional<base::Subprocess> coordinator_;
  std::string address_;
  int coordinators_ = 0;
  int starts_ = 0;
  std::unique_ptr<v1::Generation::Stub> generation_;
  std::unique_ptr<v1::Cluster::Stub> cluster_;
  std::vector<base::Subprocess> workers_;
  std::vector<std::string> worker_addresses_;
};

// `prompt_tokens` random token ids (seeded: every job its own prefix) and `max_tokens`.
v1::GenerateRequest TokenRequest(int prompt_tokens, int max_tokens, uint64_t seed) {
  v1::GenerateRequest request;
  std::mt19937_64 random(seed);
  for (int i = 0; i < prompt_tokens; ++i) {
    request.mutable_tokens()->add_token_ids(static_cast<int32_t>(1 + random() % 500));
  }
  request.set_max_tokens(max_tokens);
  request.set_seed(seed);
  request.mutable_stop()->set_ignore_eos(true);
  return request;
}

class WorkerLifecycleTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = new std::string(TempPath("tiny-model"));
    model::MakeModelOptions options;
    options.out_dir = *model_dir_;
    options.seed = 1;
    ASSERT_TRUE(model::MakeModel(options).ok());
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*model_dir_);
    delete model_dir_;
  }
  static std::string* model_dir_;
};
std::string* WorkerLifecycleTest::model_dir_ = nullptr;

TEST_F(WorkerLifecycleTest, ARestartedWorkerTakesTheNextJobsAtOnce) {
  Cluster cluster(*model_dir_, "restart");
  ASSERT_TRUE(cluster.StartCoordinator({"--heartbeat_ms=1000"}, "127.0.0.1:0"));
  const int w = cluster.StartWorker({"--id=w0"}, "127.0.0.1:0");
  ASSERT_EQ(w, 0);
  ASSERT_TRUE(
      cluster.AwaitState(cluster.worker_address(w), v1::WORKER_STATE_READY, absl::Seconds(10)));
  ASSERT_EQ(cluster.Finished(cluster.Submit(TokenRequest(8, 4, 1))).reason(),
            v1::FINISH_REASON_MAX_TOKENS);

  cluster.worker(w).Signal(SIGKILL);
  cluster.worker(w).Wait(absl::Seconds(5));
  // Routed to the dead worker (still READY: its heartbeats have not lapsed yet), this job fails
  // against it and waits for a worker instead of failing.
  const std::string orphan = cluster.Submit(TokenRequest(8, 4, 2));
  ASSERT_TRUE(cluster.RestartWorker(w, {"--id=w0"}));
  ASSERT_TRUE(
      cluster.AwaitState(cluster.worker_address(w), v1::WORKER_STATE_READY, absl::Seconds(10)));
  std::vector<std::string> next;
  for (int i = 0; i < 4; ++i) next.push_back(cluster.Submit(TokenRequest(8, 4, 10 + i)));
  for (const std::string& id : next) {
    const v1::FinishedEvent finished = cluster.Finished(id);
    EXPECT_EQ(finished.reason(), v1::FINISH_REASON_MAX_TOKENS) << id << ": " << finished.error();
  }
  const v1::FinishedEvent finished = cluster.Finished(orphan);
  EXPECT_EQ(finished.reason(), v1::FINISH_REASON_MAX_TOKENS) << finished.error();
  EXPECT_EQ(cluster.AwaitNoSequences(w, absl::Seconds(5)), 0);
}

TEST_F(WorkerLifecycleTest, AStoppedWorkerDeregistersAndItsJobsFinishElsewhere) {
  Cluster cluster(*model_dir_, "sigterm");
  // Heartbeats lapse after 5 s: the worker must say it leaves, not wait for that.
  ASSERT_TRUE(cluster.StartWithOneWorker({"--heartbeat_ms=1000", "--steps_per_run=8"}, {"--id=a"}));
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(cluster.Submit(TokenRequest(16, 300, 20 + i)));
  cluster.AwaitFirstEvent(ids.back());
  ASSERT_EQ(cluster.StartWorker({"--id=b"}, "127.0.0.1:0"), 1);
  ASSERT_TRUE(
      cluster.AwaitState(cluster.worker_address(1), v1::WORKER_STATE_READY, absl::Seconds(10)));

  cluster.worker(0).Signal(SIGTERM);
  EXPECT_TRUE(
      cluster.AwaitState(cluster.worker_address(0), v1::WORKER_STATE_DRAINING, absl::Seconds(2)))
      << "a stopping worker leaves at once";
  for (int i = 0; i < 4; ++i) ids.push_back(cluster.Submit(TokenRequest(16, 20, 30 + i)));
  for (const std::string& id : ids) {
    const v1::FinishedEvent finished = cluster.Finished(id);
    EXPECT_EQ(finished.reason(), v1::FINISH_REASON_MAX_TOKENS) << id << ": " << finished.error();
  }
  EXPECT_EQ(cluster.worker(0).Wait(absl::Seconds(15)), 0) << "exits cleanly after draining";
}

TEST_F(WorkerLifecycleTest, AGoneCoordinatorsSequencesAreReleasedWhenTheirLeaseLapses) {
  Cluster cluster(*model_dir_, "lease");
  ASSERT_TRUE(cluster.StartWithOneWorker({"--heartbeat_ms=200"}, {"--owner_lease_seconds=2"}));
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(cluster.Submit(TokenRequest(64, 1500, 40 + i)));
  cluster.AwaitFirstEvent(ids.back());
  ASSERT_GT(cluster.WorkerHealth(0).live_sequences(), 0);
  cluster.coordinator().Signal(SIGKILL);
  cluster.coordinator().Wait(absl::Seconds(5));
  EXPECT_EQ(cluster.AwaitNoSequences(0, absl::Seconds(8)), 0)
      << "the sequences of a coordinator silent for the lease are released";
  EXPECT_GT(cluster.WorkerHealth(0).expired_sequences(), 0);
  EXPECT_EQ(cluster.WorkerHealth(0).cache().used_blocks(), 0);
}

TEST_F(WorkerLifecycleTest, AJobWhoseSequencesLapsedIsPrefilledAgainAndGoesOnUnchanged) {
  Cluster cluster(*model_dir_, "reprefill");
  // Short runs: the job goes back to the coordinator often, so the pause lands between runs.
  // Heartbeats lapse after 2.5 s, the lease after 1 s: the pause below (until the lease lapsed)
  // lets the worker drop the job's sequences without the coordinator presuming the worker dead.
  ASSERT_TRUE(cluster.StartWithOneWorker({"--heartbeat_ms=500", "--steps_per_run=8"},
                                         {"--owner_lease_seconds=1"}));
  const v1::GenerateRequest request = TokenRequest(100, 1500, 81);
  const std::string reference = cluster.Submit(request);
  ASSERT_EQ(cluster.Finished(reference).reason(), v1::FINISH_REASON_MAX_TOKENS);

  // The same job again; the coordinator stops answering mid-job for longer than the lease.
  const std::string paused = cluster.Submit(request);
  cluster.AwaitFirstEvent(paused);
  cluster.coordinator().Signal(SIGSTOP);
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (cluster.WorkerHealth(0).expired_sequences() == 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GT(cluster.WorkerHealth(0).expired_sequences(), 0) << "the lease lapsed";
  cluster.coordinator().Signal(SIGCONT);

  const v1::FinishedEvent finished = cluster.Finished(paused);
  EXPECT_EQ(finished.reason(), v1::FINISH_REASON_MAX_TOKENS) << finished.error();
  const v1::Job job = cluster.GetJob(paused);
  EXPECT_GE(job.reprefilled(), 1);
  // Prefilled again from the committed path, not continued from an empty context: the same
  // tokens as the uninterrupted job.
  const v1::Job expected = cluster.GetJob(reference);
  ASSERT_EQ(job.token_ids_size(), expected.token_ids_size());
  EXPECT_TRUE(
      std::equal(job.token_ids().begin(), job.token_ids().end(), expected.token_ids().begin()));
  EXPECT_EQ(cluster.AwaitNoSequences(0, absl::Seconds(5)), 0);
}

TEST_F(WorkerLifecycleTest, ARestartedCoordinatorMakesTheWorkerDropTheOldOnesSequences) {
  Cluster cluster(*model_dir_, "epoch");
  ASSERT_TRUE(cluster.StartCoordinator({"--heartbeat_ms=200"}, "127.0.0.1:0"));
  const std::string address = cluster.address();
  // A lease far longer than the test: only the new epoch can release the sequences.
  ASSERT_EQ(cluster.StartWorker({"--owner_lease_seconds=600"}, "127.0.0.1:0"), 0);
  ASSERT_TRUE(
      cluster.AwaitState(cluster.worker_address(0), v1::WORKER_STATE_READY, absl::Seconds(10)));
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(cluster.Submit(TokenRequest(64, 1500, 50 + i)));
  cluster.AwaitFirstEvent(ids.back());
  ASSERT_GT(cluster.WorkerHealth(0).live_sequences(), 0);
  cluster.coordinator().Signal(SIGKILL);
  cluster.coordinator().Wait(absl::Seconds(5));
  ASSERT_TRUE(cluster.StartCoordinator({"--heartbeat_ms=200"}, address));
  ASSERT_TRUE(
      cluster.AwaitState(cluster.worker_address(0), v1::WORKER_STATE_READY, absl::Seconds(10)));
  EXPECT_EQ(cluster.AwaitNoSequences(0, absl::Seconds(3)), 0)
      << "re-registered under a new epoch, the worker drops the old epoch's sequences";
  EXPECT_EQ(cluster.WorkerHealth(0).cache().used_blocks(), 0);
  // And serves the new coordinator.
  EXPECT_EQ(cluster.Finished(cluster.Submit(TokenRequest(8, 4, 60))).reason(),
            v1::FINISH_REASON_MAX_TOKENS);
}

TEST_F(WorkerLifecycleTest, JobsWaitForKvInsteadOfFailing) {
  Cluster cluster(*model_dir_, "kv");
  ASSERT_TRUE(cluster.StartWithOneWorker({"--heartbeat_ms=500"}, {"--kv_tokens=2048"}));
  // Eight 1,500-token jobs; the worker's KV holds one at a time.
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(cluster.Submit(TokenRequest(1000, 500, 70 + i)));
  for (const std::string& id : ids) {
    // The waiting jobs take the KV in no fixed order, so the first may be served last, after
    // seven others: on a loaded machine that took over the usual two minutes.
    const v1::FinishedEvent finished = cluster.Finished(id, absl::Seconds(270));
    EXPECT_EQ(finished.reason(), v1::FINISH_REASON_MAX_TOKENS) << id << ": " << finished.error();
  }
  EXPECT_EQ(cluster.AwaitNoSequences(0, absl::Seconds(5)), 0);
  EXPECT_EQ(cluster.WorkerHealth(0).cache().used_blocks(), 0);
}

TEST_F(WorkerLifecycleTest, ReadinessRequiresAReadyWorker) {
  using grpc::health::v1::HealthCheckResponse;
  Cluster cluster(*model_dir_, "ready");
  ASSERT_TRUE(cluster.StartCoordinator({"--heartbeat_ms=1000"}, "127.0.0.1:0"));
  EXPECT_EQ(cluster.Health(""), HealthCheckResponse::SERVING) << "the process is up";
  EXPECT_EQ(cluster.Health("arbor.ready"), HealthCheckResponse::NOT_SERVING) << "no worker";
  ASSERT_EQ(cluster.StartWorker({}, "127.0.0.1:0"), 0);
  EXPECT_TRUE(cluster.AwaitReady(HealthCheckResponse::SERVING, absl::Seconds(10)));
  cluster.worker(0).Signal(SIGTERM);
  EXPECT_TRUE(cluster.AwaitReady(HealthCheckResponse::NOT_SERVING, absl::Seconds(3)))
      << "its only worker left";
}

}  // namespace
}  // namespace arbor
