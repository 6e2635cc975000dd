// A pool with one READY worker whose jobs run on a scripted worker (../job/scripted_worker.h),
// the registry and the real launcher: the fixture of the service's tests.
#ifndef ARBOR_TESTS_COORDINATOR_SERVICE_SERVICE_HARNESS_H_
#define ARBOR_TESTS_COORDINATOR_SERVICE_SERVICE_HARNESS_H_

#include <memory>
#include <string>
#include <vector>

#include "base/fake_clock.h"
#include "coordinator/cluster/worker_pool.h"
#include "coordinator/job/timer.h"
#include "coordinator/service/job_launcher.h"
#include "coordinator/service/job_registry.h"
#include "coordinator/service/prompt.h"
#include "coordinator/store/job_store.h"
#include "gtest/gtest.h"
#include "tests/coordinator/job/scripted_worker.h"

namespace arbor::coordinator {

constexpr int32_t kEos = 63;

// A pool with one READY worker whose jobs run on `worker` (a scripted one), and the launcher.
struct Harness {
  // `store` may be null (no job store).
  explicit Harness(JobRegistryOptions registry_options = {}, int calm_token = 10,
                   JobStore* store = nullptr)
      : worker(std::make_shared<testing::ScriptedWorker>(
            "w0",
            [calm_token](const testing::ScriptInput&) {
              return testing::Lelv({{calm_token, 0.9}, {calm_token + 1, 0.1}});
            },
            std::vector<int32_t>{kEos})),
        pool(WorkerPoolOptions{}, &clock),
        registry(registry_options) {
    EXPECT_TRUE(pool.Register("127.0.0.1:1", Worker("w0")).ok());
    launcher = std::make_unique<JobLauncher>(
        LauncherOptions{}, &pool, &registry, &prompts, &clock, &timer,
        [this](const WorkerHandle&) -> std::shared_ptr<WorkerClient> { return worker; }, store);
  }

  // What worker `id` of the scripted model says of itself when it registers.
  static arbor::v1::WorkerInfo Worker(const std::string& id) {
    arbor::v1::WorkerInfo info;
    info.set_worker_id(id);
    info.mutable_model()->set_vocab_size(testing::kVocab);
    info.mutable_model()->set_max_context(512);
    info.mutable_model()->add_eos_token_ids(kEos);
    info.set_block_size(16);
    info.set_kv_capacity_tokens(4096);
    info.set_max_top_k(64);
    return info;
  }

  static arbor::v1::GenerateRequest Request(int max_tokens, uint64_t seed = 7) {
    arbor::v1::GenerateRequest request;
    request.mutable_tokens()->add_token_ids(1);
    request.mutable_tokens()->add_token_ids(2);
    request.set_max_tokens(max_tokens);
    request.set_seed(seed);
    return request;
  }

  base::FakeClock clock;
  std::shared_ptr<testing::ScriptedWorker> worker;
  WorkerPool pool;
  JobRegistry registry;
  PromptCodec prompts;  // Token prompts only.
  ThreadTimer timer;
  std::unique_ptr<JobLauncher> launcher;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_TESTS_COORDINATOR_SERVICE_SERVICE_HARNESS_H_
