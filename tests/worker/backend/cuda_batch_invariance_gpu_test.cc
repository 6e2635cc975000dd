// Batch invariance of the CUDA backend (--numerics=invariant, the default): the CPU backend's
// checks (batch_invariance_check.h) on a random bf16 Llama and a tied Qwen2, with fp32 and bf16
// KV pools, graphs on and off (cuda_backend_gpu_test.cc checks the same backend against the CPU
// forward); and a model the invariant GEMM cannot take refused with the way out named. Skips
// without a device.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_status.h"
#include "tests/worker/backend/batch_invariance_check.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cuda_backend.h"

namespace arbor::worker {
namespace {

TEST(CudaBatchInvariance, EveryRowIsItsOwnWhateverSharesItsStep) {
  if (kernels::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  std::mt19937 rng(11);
  for (bool qwen2 : {false, true}) {
    model::ModelConfig config = testing::TinyConfig();
    if (qwen2) {
      config.architecture = model::Architecture::kQwen2;
      config.tie_word_embeddings = true;
    }
    const testing::RandomLlama model(config, /*bf16=*/true, rng);
    for (KvDtype kv : {KvDtype::kF32, KvDtype::kBF16}) {
      for (bool graphs : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "qwen2 " << qwen2 << " kv bf16 "
                                          << (kv == KvDtype::kBF16) << " graphs " << graphs);
        auto backend = CudaBackend::Create(config, model.Lookup(),
                                           {.device = 0,
                                            .kv_blocks = testing::kInvarianceBlocks,
                                            .block_size = 16,
                                            .kv_dtype = kv,
                                            .cuda_graphs = graphs});
        ASSERT_TRUE(backend.ok()) << backend.status();
        testing::CheckInvariance(**backend);
        testing::CheckSiblings(**backend);
      }
    }
  }
}

// A model whose widths the invariant GEMM cannot take is refused with the way out named.
TEST(CudaBatchInvariance, RefusesWidthsTheInvariantGemmCannotTake) {
  if (kernels::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  std::mt19937 rng(12);
  model::ModelConfig config = testing::TinyConfig();
  config.intermediate_size = 132;  // Not a multiple of 8: cuBLASLt alone takes it.
  const testing::RandomLlama model(config, /*bf16=*/true, rng);
  auto invariant = CudaBackend::Create(config, model.Lookup(), {.device = 0});
  ASSERT_FALSE(invariant.ok());
  EXPECT_NE(invariant.status().message().find("--numerics=fast"), std::string::npos)
      << invariant.status();
  auto fast = CudaBackend::Create(config, model.Lookup(), {.device = 0, .batch_invariant = false});
  EXPECT_TRUE(fast.ok()) << fast.status();
}

}  // namespace
}  // namespace arbor::worker
