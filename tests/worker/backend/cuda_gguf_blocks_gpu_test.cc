// GGUF block-quantized weights on the CUDA backend: a random Llama whose matrices are random
// blocks of each type the GPU reads (Q8_0 with the head tied to a Q8_0 embedding table, Q4_0,
// Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; and a Q4_K_M-like mix whose q/k/v group is widened to bf16
// for sharing no type) gives the CPU backend's logits (weights widened exactly, fp32
// activations) within bf16 rounding, with the blocks kept on the device (fewer weight bytes than
// bf16) and widened at load alike, in both numerics. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_status.h"
#include "model/dtype.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cpu_backend.h"
#include "worker/backend/cuda_backend.h"

namespace arbor::worker {
namespace {

using model::DType;

// Hidden and ffn widths that hold whole K-quant super-blocks.
model::ModelConfig BlockConfig() {
  model::ModelConfig c = testing::TinyConfig();
  c.hidden_size = 256;
  c.intermediate_size = 512;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.tie_word_embeddings = false;
  return c;
}

double RelativeError(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    err += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    norm += double{want[i]} * want[i];
  }
  return std::sqrt(err / std::max(norm, 1e-30));
}

// A 37-token prefill then two decode steps; each step's last logits.
std::vector<std::vector<float>> PrefillAndDecode(Backend& backend,
                                                 const std::vector<int32_t>& tokens) {
  const int vocab = backend.config().vocab_size;
  const std::vector<int32_t> table = {0, 1, 2, 3};
  std::vector<std::vector<float>> out;
  for (int step = 0; step < 3; ++step) {
    const int begin = step == 0 ? 0 : 36 + step, end = 37 + step;
    std::vector<float>& logits = out.emplace_back(vocab);
    const ForwardRow row{std::span<const int32_t>(tokens).subspan(begin, end - begin), begin, table,
                         nullptr, logits.data()};
    const absl::Status status = backend.Forward({&row, 1});
    EXPECT_TRUE(status.ok()) << status;
  }
  return out;
}

TEST(CudaGgufBlocks, EveryBlockTypeGivesTheCpuLogits) {
  if (kernels::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  std::mt19937 rng(21);
  std::vector<int32_t> tokens(40);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % BlockConfig().vocab_size);
  std::vector<std::vector<DType>> recipes;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                  DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    recipes.push_back(std::vector<DType>(8, t));
  }
  // As llama.cpp's Q4_K_M mixes them: v (so q/k/v, which then widen to bf16) and down in Q6_K.
  recipes.push_back({DType::kQ4_K, DType::kQ4_K, DType::kQ6_K, DType::kQ4_K, DType::kQ4_K,
                     DType::kQ4_K, DType::kQ6_K, DType::kQ6_K});
  for (size_t r = 0; r < recipes.size(); ++r) {
    const std::vector<DType>& types = recipes[r];
    // The first recipe tied, as SmolLM2's GGUF file is: the head reads the table's Q8_0 blocks.
    model::ModelConfig config = BlockConfig();
    config.tie_word_embeddings = r == 0;
    SCOPED_TRACE(::testing::Message() << "types " << model::DTypeName(types[0]) << " … "
                                      << model::DTypeName(types[2]) << " tied " << (r == 0));
    const testing::RandomBlockLlama model(config, types, rng);
    auto cpu = CpuBackend::Create(config, model.Lookup(),
                                  {.kv_blocks = 8,
                                   .block_size = 16,
                                   .threads = 2,
                                   .activation_quant = kernels::ActivationQuant::kF32});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    const std::vector<std::vector<float>> want = PrefillAndDecode(**cpu, tokens);
    int64_t bf16_bytes = 0;
    for (bool keep_blocks : {false, true}) {
      for (bool invariant : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << "blocks kept " << keep_blocks << " invariant " << invariant);
        auto cuda = CudaBackend::Create(config, model.Lookup(),
                                        {.device = 0,
                                         .kv_blocks = 8,
                                         .block_size = 16,
                                         .kv_dtype = KvDtype::kF32,
                                         .batch_invariant = invariant,
                                         .keep_blocks = keep_blocks});
        ASSERT_TRUE(cuda.ok()) << cuda.status();
        const std::vector<std::vector<float>> got = PrefillAndDecode(**cuda, tokens);
        for (size_t step = 0; step < want.size(); ++step) {
          // bf16 weights and activations against exact ones: ~1e-3 per matmul.
          EXPECT_LT(RelativeError(got[step], want[step]), 2e-2) << "step " << step;
        }
        if (keep_blocks) {
          EXPECT_LT((*cuda)->weight_bytes(), bf16_bytes);
        } else {
          bf16_bytes = (*cuda)->weight_bytes();
        }
      }
    }
  }
}

}  // namespace
}  // namespace arbor::worker
