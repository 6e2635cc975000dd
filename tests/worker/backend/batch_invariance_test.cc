// Batch invariance of the CPU backend (--numerics=invariant, the default; the checks are
// batch_invariance_check.h's, row reductions included: a lone row's is shared among the
// threads), on one and two threads: on a random Llama served as Q8_0 with
// 8-bit activations and in the exact mode, on a random Qwen3 (per-head q/k norms), and on
// SmolLM2-135M-Instruct's Q4_1 GGUF when it is at hand. With --numerics=fast the decode and
// prefill comparisons differ.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/checkpoint.h"
#include "model/model_store.h"
#include "tests/worker/backend/batch_invariance_check.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cpu_backend.h"

namespace arbor::worker {
namespace {

std::unique_ptr<CpuBackend> RandomModel(const testing::RandomLlama& model, int threads,
                                        kernels::ActivationQuant activation_quant) {
  auto backend = CpuBackend::Create(model.config(), model.Lookup(),
                                    {.kv_blocks = testing::kInvarianceBlocks,
                                     .block_size = 16,
                                     .threads = threads,
                                     .weights_dtype = WeightsDtype::kQ8_0,
                                     .activation_quant = activation_quant});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

TEST(BatchInvariance, RandomLlamaInQ8_0OnOneAndTwoThreadsInBothActivationModes) {
  std::mt19937 rng(5);
  const testing::RandomLlama model(testing::TinyConfig(), /*bf16=*/false, rng);
  for (kernels::ActivationQuant mode :
       {kernels::ActivationQuant::kQ8, kernels::ActivationQuant::kF32}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(::testing::Message()
                   << "threads " << threads << " mode " << static_cast<int>(mode));
      std::unique_ptr<CpuBackend> backend = RandomModel(model, threads, mode);
      ASSERT_NE(backend, nullptr);
      testing::CheckInvariance(*backend, {.reductions = true});
      testing::CheckSiblings(*backend, {.reductions = true});
    }
  }
}

// Qwen3's per-head q/k norms run per token, so they keep a row's logits independent of its
// batch; head_dim 24 is not hidden / heads.
TEST(BatchInvariance, RandomQwen3InQ8_0OnTwoThreads) {
  std::mt19937 rng(6);
  model::ModelConfig config = testing::TinyConfig();
  config.architecture = model::Architecture::kQwen3;
  config.head_dim = 24;
  const testing::RandomLlama model(config, /*bf16=*/false, rng);
  std::unique_ptr<CpuBackend> backend = RandomModel(model, 2, kernels::ActivationQuant::kQ8);
  ASSERT_NE(backend, nullptr);
  testing::CheckInvariance(*backend, {.reductions = true});
  testing::CheckSiblings(*backend, {.reductions = true});
}

TEST(BatchInvariance, SmolLM2Q4_1OnOneAndTwoThreads) {
  setenv("ARBOR_PYTHON", ARBOR_PYTHON, /*overwrite=*/0);  // Has pip, for the first fetch.
  const absl::StatusOr<std::string> path = model::ResolveModel(model::kDefaultModelName);
  if (absl::IsUnavailable(path.status())) GTEST_SKIP() << path.status();
  ASSERT_TRUE(path.ok()) << path.status();
  for (int threads : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "threads " << threads);
    absl::StatusOr<std::unique_ptr<model::Checkpoint>> checkpoint = model::Checkpoint::Open(*path);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    auto backend = CpuBackend::Create(
        std::shared_ptr<const model::Checkpoint>(*std::move(checkpoint)),
        {.kv_blocks = testing::kInvarianceBlocks, .block_size = 16, .threads = threads});
    ASSERT_TRUE(backend.ok()) << backend.status();
    testing::CheckInvariance(**backend, {.reductions = true});
    testing::CheckSiblings(**backend, {.reductions = true});
  }
}

}  // namespace
}  // namespace arbor::worker
