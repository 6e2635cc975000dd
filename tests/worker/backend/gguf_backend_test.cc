// A GGUF file of a random Llama, written as llama.cpp's converter writes one (llama.* keys,
// blk.N.* names, the rows of attn_q and attn_k permuted for interleaved RoPE), loaded through
// Checkpoint::Open into the CPU backend: its logits equal those of the same weights served
// directly in Hugging Face layout. This proves the tensor mapping and that the permutation is
// undone at load; the real-weight test (smollm2_reference_test.cc) proves the same against an
// independent float64 forward that rotates the llama.cpp way.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "kernels/rope.h"
#include "model/checkpoint.h"
#include "tests/model/gguf_builder.h"
#include "tests/support/test_seed.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cpu_backend.h"
#include "worker/backend/forward_rows.h"

namespace arbor::worker {
namespace {

using model::testing::GgufBuilder;

// llama.cpp's permutation of a q or k projection: GGUF row h·d + 2i + t is HF row h·d + t·d/2 + i.
std::vector<float> PermuteForInterleavedRope(const std::vector<float>& hf, int heads,
                                             int64_t cols) {
  const int64_t rows = static_cast<int64_t>(hf.size()) / cols, d = rows / heads;
  std::vector<float> out(hf.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < d / 2; ++i) {
      for (int64_t t = 0; t < 2; ++t) {
        std::copy_n(hf.begin() + (h * d + t * d / 2 + i) * cols, cols,
                    out.begin() + (h * d + 2 * i + t) * cols);
      }
    }
  }
  return out;
}

// `rope_freqs`: the tensor rope_freqs.weight, when not empty.
std::string WriteGguf(const testing::RandomLlama& model, const std::string& path,
                      const std::vector<float>& rope_freqs = {}) {
  const model::ModelConfig& c = model.config();
  GgufBuilder b;
  b.String("general.architecture", "llama").String("general.name", "random");
  b.U32("llama.block_count", c.num_layers).U32("llama.embedding_length", c.hidden_size);
  b.U32("llama.feed_forward_length", c.intermediate_size);
  b.U32("llama.attention.head_count", c.num_heads);
  b.U32("llama.attention.head_count_kv", c.num_kv_heads);
  b.U32("llama.context_length", c.max_position_embeddings);
  b.F32("llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  b.F32("llama.rope.freq_base", c.rope_theta).U32("llama.vocab_size", c.vocab_size);
  const TensorLookup lookup = model.Lookup();
  auto add = [&](const std::string& gguf_name, const std::string& hf_name, int permute_heads) {
    const model::TensorView t = lookup(hf_name).value();
    const float* data = static_cast<const float*>(t.data);
    std::vector<float> values(data, data + t.nbytes / 4);
    const int64_t cols = t.shape.back();
    if (permute_heads > 0) values = PermuteForInterleavedRope(values, permute_heads, cols);
    std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());
    b.Tensor(gguf_name, /*F32=*/0, ne,
             std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  };
  if (!rope_freqs.empty()) {
    b.Tensor("rope_freqs.weight", /*F32=*/0, {rope_freqs.size()},
             std::string(reinterpret_cast<const char*>(rope_freqs.data()), rope_freqs.size() * 4));
  }
  add("token_embd.weight", "model.embed_tokens.weight", 0);
  add("output_norm.weight", "model.norm.weight", 0);
  if (!c.tie_word_embeddings) add("output.weight", "lm_head.weight", 0);
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string g = absl::StrCat("blk.", l, "."), h = absl::StrCat("model.layers.", l, ".");
    add(g + "attn_norm.weight", h + "input_layernorm.weight", 0);
    add(g + "ffn_norm.weight", h + "post_attention_layernorm.weight", 0);
    add(g + "attn_q.weight", h + "self_attn.q_proj.weight", c.num_heads);
    add(g + "attn_k.weight", h + "self_attn.k_proj.weight", c.num_kv_heads);
    add(g + "attn_v.weight", h + "self_attn.v_proj.weight", 0);
    add(g + "attn_output.weight", h + "self_attn.o_proj.weight", 0);
    add(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", 0);
    add(g + "ffn_up.weight", h + "mlp.up_proj.weight", 0);
    add(g + "ffn_down.weight", h + "mlp.down_proj.weight", 0);
  }
  EXPECT_TRUE(base::WriteFileAtomically(path, b.Build()).ok());
  return path;
}

const CpuBackendOptions kOptions{.kv_blocks = 64, .block_size = 16, .threads = 2};

// The CPU backend over the GGUF file at `path`, loaded as a user's file is (Checkpoint::Open).
absl::StatusOr<std::unique_ptr<CpuBackend>> ServeGguf(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint, model::Checkpoint::Open(path));
  return CpuBackend::Create(std::shared_ptr<const model::Checkpoint>(std::move(checkpoint)),
                            kOptions);
}

TEST(GgufBackend, LoadsLikeTheHuggingFaceLayout) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (bool tied : {true, false}) {
    model::ModelConfig config = testing::TinyConfig();
    config.rope_scaling = {};  // Llama 3 scaling in GGUF: RopeFreqsCarryLlama3Scaling below.
    config.tie_word_embeddings = tied;
    const testing::RandomLlama model(config, /*bf16=*/false, rng);
    const std::string path = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                          "/gguf-backend-", getpid(), ".gguf");
    auto from_gguf = ServeGguf(WriteGguf(model, path));
    ASSERT_TRUE(from_gguf.ok()) << from_gguf.status();
    EXPECT_EQ((*from_gguf)->config().tie_word_embeddings, tied);
    auto direct = CpuBackend::Create(config, model.Lookup(), kOptions);
    ASSERT_TRUE(direct.ok()) << direct.status();
    std::vector<int32_t> tokens(29);
    for (int32_t& t : tokens) t = std::uniform_int_distribution<int32_t>(0, 511)(rng);
    const std::vector<float> want = testing::LastLogits(**direct, tokens).value();
    const std::vector<float> got = testing::LastLogits(**from_gguf, tokens).value();
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "tied " << tied << " " << i;
    std::filesystem::remove(path);
  }
}

// A Llama 3.1+ GGUF carries llama3 RoPE scaling as per-frequency divisors (rope_freqs.weight,
// written by llama.cpp's converter as base frequency ÷ scaled frequency): served from the file,
// it gives the logits the Hugging Face config's rope_scaling gives, to fp32 rounding of the
// frequencies.
TEST(GgufBackend, RopeFreqsCarryLlama3Scaling) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  model::ModelConfig config = testing::TinyConfig();
  ASSERT_EQ(config.rope_scaling.type, model::RopeScaling::Type::kLlama3);
  config.tie_word_embeddings = true;
  const testing::RandomLlama model(config, /*bf16=*/false, rng);
  const std::vector<float> base = kernels::RopeInvFreq(config.rope_theta, config.head_dim, {});
  const std::vector<float> scaled = kernels::RopeInvFreq(config.rope_theta, config.head_dim,
                                                         RopeScalingParamsOf(config.rope_scaling));
  std::vector<float> factors(base.size());
  bool scales = false;
  for (size_t i = 0; i < base.size(); ++i) {
    factors[i] = static_cast<float>(double{base[i]} / scaled[i]);
    scales |= factors[i] > 1.5f;
  }
  ASSERT_TRUE(scales) << "the tiny config's llama3 scaling must move some frequency";
  const std::string path = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                        "/gguf-rope-freqs-", getpid(), ".gguf");
  auto from_gguf = ServeGguf(WriteGguf(model, path, factors));
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status();
  EXPECT_EQ((*from_gguf)->config().rope_scaling.freq_factors, factors);
  auto direct = CpuBackend::Create(config, model.Lookup(), kOptions);
  ASSERT_TRUE(direct.ok()) << direct.status();
  std::vector<int32_t> tokens(200);  // Far enough for the scaled low frequencies to matter.
  for (int32_t& t : tokens) t = std::uniform_int_distribution<int32_t>(0, 511)(rng);
  const std::vector<float> want = testing::LastLogits(**direct, tokens).value();
  const std::vector<float> got = testing::LastLogits(**from_gguf, tokens).value();
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(double{got[i]} - want[i]));
    scale = std::max(scale, std::abs(double{want[i]}));
  }
  EXPECT_LE(worst, 1e-4 * scale);
  // Without the tensor the same file serves plain RoPE: the logits move, so the test can fail.
  const std::string plain = WriteGguf(model, path + ".plain");
  auto unscaled = ServeGguf(plain);
  ASSERT_TRUE(unscaled.ok()) << unscaled.status();
  const std::vector<float> other = testing::LastLogits(**unscaled, tokens).value();
  double moved = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    moved = std::max(moved, std::abs(double{other[i]} - want[i]));
  }
  EXPECT_GT(moved, 100 * worst + 1e-6);
  std::filesystem::remove(path);
  std::filesystem::remove(plain);
}

}  // namespace
}  // namespace arbor::worker
