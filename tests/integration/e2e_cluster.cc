// E2eCluster (e2e_cluster.h): the processes, the readiness probe and the workers' KV count.
#include "tests/integration/e2e_cluster.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tools/local_cluster.h"

namespace arbor {

namespace {
const std::string kBin = ARBOR_BINARY_DIR "/bin";
}  // namespace

std::unique_ptr<E2eCluster> E2eCluster::Start(const std::string& model_dir,
                                              const std::string& dir) {
  auto cluster = std::make_unique<E2eCluster>();
  cluster->dir = dir;
  std::filesystem::create_directories(dir);
  for (int i = 0; i < 2; ++i) {
    std::string address;
    absl::StatusOr<base::Subprocess> worker =
        tools::StartServer({kBin + "/arbor-worker", "--model=" + model_dir, "--log_level=warn"},
                           "127.0.0.1:0", absl::StrCat(dir, "/worker", i, ".port"),
                           absl::StrCat(dir, "/worker", i, ".log"), absl::Seconds(30), &address);
    EXPECT_TRUE(worker.ok()) << worker.status();
    if (!worker.ok()) return nullptr;
    cluster->workers.push_back(*std::move(worker));
    cluster->worker_addresses.push_back(address);
  }
  absl::StatusOr<base::Subprocess> coordinator =
      tools::StartServer({kBin + "/arbor-coordinator", "--model=" + model_dir,
                          "--workers=" + absl::StrJoin(cluster->worker_addresses, ","),
                          "--steps_per_run=8", "--heartbeat_ms=200", "--log_level=warn"},
                         "127.0.0.1:0", dir + "/coordinator.port", dir + "/coordinator.log",
                         absl::Seconds(30), &cluster->address);
  EXPECT_TRUE(coordinator.ok()) << coordinator.status();
  if (!coordinator.ok()) return nullptr;
  cluster->coordinator.emplace(*std::move(coordinator));
  cluster->stub = v1::Generation::NewStub(
      grpc::CreateChannel(cluster->address, grpc::InsecureChannelCredentials()));
  // Static workers are dialled in the background: wait until a job can be routed.
  for (int i = 0; i < 300; ++i) {
    grpc::ClientContext context;
    v1::JobRef ref;
    v1::GenerateRequest probe;
    probe.mutable_tokens()->add_token_ids(1);
    probe.set_max_tokens(1);
    const grpc::Status status = cluster->stub->Submit(&context, probe, &ref);
    if (status.ok()) return cluster->AfterProbe(ref) ? std::move(cluster) : nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "no worker became ready";
  return nullptr;
}

bool E2eCluster::AfterProbe(const v1::JobRef& ref) {
  grpc::ClientContext context;
  auto reader = stub->Watch(&context, ref);
  v1::GenerateEvent event;
  while (reader->Read(&event)) {
  }
  EXPECT_TRUE(reader->Finish().ok());
  const int64_t used = WaitForUsedBlocks(0);
  EXPECT_EQ(used, 0) << "the probe job's KV was not released";
  return used == 0;
}

int64_t E2eCluster::WaitForUsedBlocks(int64_t expected) const {
  int64_t used = -1;
  for (int i = 0; i < 200; ++i) {
    used = UsedBlocks(0) + UsedBlocks(1);
    if (used == expected) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return used;
}

int64_t E2eCluster::UsedBlocks(int worker) const {
  auto stub = v1::Worker::NewStub(
      grpc::CreateChannel(worker_addresses[worker], grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::HealthResponse health;
  EXPECT_TRUE(stub->Health(&context, {}, &health).ok());
  return health.cache().used_blocks();
}

E2eCluster::~E2eCluster() {
  workers.clear();
  coordinator.reset();
  // The logs and port files stay where a test failed, to read.
  if (testing::Test::HasFailure() || testing::UnitTest::GetInstance()->failed_test_count() > 0) {
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace arbor
