// The worker's KV pool sized from a memory budget (--kv_memory) or a token count (--kv_tokens),
// on a tiny make-model checkpoint: the capacity the worker reports is what the budget holds of
// this model's KV, --kv_tokens overrides it, and budgets that hold less than one block or do not
// parse are refused naming the flag.
#include "worker/service/worker_setup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "tests/worker/engine/engine_harness.h"

namespace arbor::worker {
namespace {

using ::testing::HasSubstr;

class WorkerSetupTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<testing::TempModel>> model = testing::TempModel::Make("tiny", 4);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
  }
  static void TearDownTestSuite() { delete model_; }
  static WorkerSetupOptions Options() {
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.threads = 1;
    options.kv_dtype = "f32";
    return options;
  }
  static testing::TempModel* model_;
};
testing::TempModel* WorkerSetupTest::model_ = nullptr;

TEST_F(WorkerSetupTest, KvMemoryBudgetSizesThePool) {
  WorkerSetupOptions options = Options();
  options.kv_memory = "1MiB";
  absl::StatusOr<LoadedWorker> loaded = LoadWorker(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const v1::ModelInfo& m = loaded->info.model();
  const int64_t per_token = int64_t{m.num_layers()} * 2 * m.num_kv_heads() * m.head_dim() * 4;
  const int64_t block = loaded->info.block_size();
  // Whole blocks of what the budget holds.
  EXPECT_EQ(loaded->info.kv_capacity_tokens(), ((1 << 20) / per_token + block - 1) / block * block);

  options.kv_tokens = 4096;  // The override.
  loaded = LoadWorker(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->info.kv_capacity_tokens(), 4096);
}

TEST_F(WorkerSetupTest, DefaultBudgetIsCappedAndBadBudgetsAreRefused) {
  absl::StatusOr<LoadedWorker> loaded = LoadWorker(Options());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_GT(loaded->info.kv_capacity_tokens(), 0);
  EXPECT_LE(loaded->info.kv_capacity_tokens(), kDefaultKvTokens);

  WorkerSetupOptions options = Options();
  options.kv_memory = "1KiB";
  loaded = LoadWorker(options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("--kv_memory: 1024 bytes hold"));
  options.kv_memory = "plenty";
  loaded = LoadWorker(options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("--kv_memory: 'plenty'"));
}

}  // namespace
}  // namespace arbor::worker
