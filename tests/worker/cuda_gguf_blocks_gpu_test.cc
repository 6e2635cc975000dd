// GGUF block-quantized weights on the CUDA backend: a random Llama whose matrices are random
// blocks of each type the GPU reads (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; and a
// Q4_K_M-like mix whose q/k/v group is widened to bf16 for sharing no type) gives the CPU
// backend's logits (weights widened exactly, fp32 activations) within bf16 rounding, with the
// blocks kept on the device (fewer weight bytes than bf16) and widened at load alike, in both
// numerics. Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/bf16.h"
#include "kernels/cuda_status.h"
#include "kernels/quant/quant_blocks.h"
#include "model/dtype.h"
#include "model/llama_tensors.h"
#include "tests/worker/random_llama.h"
#include "worker/cpu_backend.h"
#include "worker/cuda_backend.h"

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

// The largest |integer · sub-scale| of a type's weights, so that scales of 0.2 / it keep the
// weights below 0.2 (random f16 scales would blow the activations up).
float LargestProduct(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
      return 127;
    case DType::kQ4_0:
    case DType::kQ4_1:
      return 16;
    case DType::kQ5_0:
    case DType::kQ5_1:
      return 32;
    case DType::kQ4_K:
      return 63 * 15;
    case DType::kQ5_K:
      return 63 * 31;
    default:
      return 128 * 32;  // Q6_K: int8 sub-scales × 6-bit integers.
  }
}

// A random Llama's norms and embeddings with its matrices replaced by random blocks.
class BlockLlama {
 public:
  BlockLlama(const model::ModelConfig& config, std::mt19937& rng)
      : base_(config, /*bf16=*/true, rng) {}

  void SetBlocks(const std::string& name, DType dtype, int64_t rows, int64_t cols,
                 std::mt19937& rng) {
    const model::DTypeLayout layout = model::Layout(dtype);
    std::vector<uint8_t>& bytes = blocks_[name].bytes;
    bytes.resize(rows * model::RowBytes(dtype, cols));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> scale(0.2f / LargestProduct(dtype) / 4,
                                                0.2f / LargestProduct(dtype));
    for (size_t at = 0; at < bytes.size(); at += layout.block_bytes) {
      for (int offset : model::HalfFieldOffsets(dtype)) {
        const uint16_t h = base::FloatToHalf((rng() & 1 ? 1 : -1) * scale(rng));
        std::memcpy(&bytes[at + offset], &h, 2);
      }
    }
    blocks_[name].dtype = dtype;
    blocks_[name].shape = {rows, cols};
  }

  TensorLookup Lookup() const {
    const TensorLookup base = base_.Lookup();
    return [this, base](const std::string& name) -> absl::StatusOr<model::TensorView> {
      auto it = blocks_.find(name);
      if (it == blocks_.end()) return base(name);
      return model::TensorView{name, it->second.dtype, it->second.shape, it->second.bytes.data(),
                               it->second.bytes.size()};
    };
  }

 private:
  struct Blocks {
    DType dtype = DType::kQ8_0;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  testing::RandomLlama base_;
  std::map<std::string, Blocks> blocks_;
};

// Every matrix of `model` as blocks: `types` gives q, k, v, o, gate, up, down, lm_head in turn.
void SetMatrices(BlockLlama& model, const model::ModelConfig& c, const std::vector<DType>& types,
                 std::mt19937& rng) {
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  const int64_t q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim;
  for (int l = 0; l < c.num_layers; ++l) {
    const model::LlamaLayerNames n = model::LlamaLayerTensorNames(l);
    model.SetBlocks(n.q, types[0], q, h, rng);
    model.SetBlocks(n.k, types[1], kv, h, rng);
    model.SetBlocks(n.v, types[2], kv, h, rng);
    model.SetBlocks(n.o, types[3], h, q, rng);
    model.SetBlocks(n.gate, types[4], f, h, rng);
    model.SetBlocks(n.up, types[5], f, h, rng);
    model.SetBlocks(n.down, types[6], h, f, rng);
  }
  model.SetBlocks(model::kLmHeadName, types[7], c.vocab_size, h, rng);
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
std::vector<std::vector<float>> PrefillAndDecode(Backend& backend, const std::vector<int32_t>& tokens) {
  const int vocab = backend.config().vocab_size;
  const std::vector<int32_t> table = {0, 1, 2, 3};
  std::vector<std::vector<float>> out;
  for (int step = 0; step < 3; ++step) {
    const int begin = step == 0 ? 0 : 36 + step, end = 37 + step;
    std::vector<float>& logits = out.emplace_back(vocab);
    const ForwardRow row{std::span<const int32_t>(tokens).subspan(begin, end - begin), begin,
                         table, nullptr, logits.data()};
    const absl::Status status = backend.Forward({&row, 1});
    EXPECT_TRUE(status.ok()) << status;
  }
  return out;
}

TEST(CudaGgufBlocks, EveryBlockTypeGivesTheCpuLogits) {
  if (kernels::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  const model::ModelConfig config = BlockConfig();
  std::mt19937 rng(21);
  std::vector<int32_t> tokens(40);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % config.vocab_size);
  std::vector<std::vector<DType>> recipes;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                  DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    recipes.push_back(std::vector<DType>(8, t));
  }
  // As llama.cpp's Q4_K_M mixes them: v (so q/k/v, which then widen to bf16) and down in Q6_K.
  recipes.push_back({DType::kQ4_K, DType::kQ4_K, DType::kQ6_K, DType::kQ4_K, DType::kQ4_K,
                     DType::kQ4_K, DType::kQ6_K, DType::kQ6_K});
  for (const std::vector<DType>& types : recipes) {
    SCOPED_TRACE(::testing::Message() << "types " << model::DTypeName(types[0]) << " … "
                                      << model::DTypeName(types[2]));
    BlockLlama model(config, rng);
    SetMatrices(model, config, types, rng);
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
        SCOPED_TRACE(::testing::Message() << "blocks kept " << keep_blocks << " invariant "
                                          << invariant);
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
