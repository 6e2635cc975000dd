// Qwen2 (Qwen2 / Qwen2.5: Llama's forward plus q/k/v projection biases) end to end on the CPU
// backend. `arbor make-model --preset qwen2-tiny` writes a Hugging Face directory as Qwen2.5's
// look (model_type qwen2, biases in model.safetensors, θ 1e6, tied embeddings, use_sliding_window
// false beside a sliding_window size); loaded as a user's directory is, its logits match the
// independent float64 PyTorch forward (tests/model/llama_reference.py, which adds the biases it
// finds) at several prompt lengths. The same weights written as llama.cpp's converter writes a
// qwen2 GGUF (qwen2.* keys, blk.N.attn_{q,k,v}.bias, q/k rows not permuted) give the very same
// logits.
//
// Tolerance: the backend computes in fp32 from f32 weights, the reference in float64; over two
// layers they agree to ~1e-6, held to 1e-4 · (1 + |logit|) as the in-memory float64 comparison
// (cpu_backend_test.cc) is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "nlohmann/json.hpp"
#include "tests/model/gguf_builder.h"
#include "tests/support/python_reference.h"
#include "tests/support/test_seed.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cpu_backend.h"

namespace arbor::worker {
namespace {

const CpuBackendOptions kOptions{.kv_blocks = 64, .block_size = 16, .threads = 2};

absl::StatusOr<std::unique_ptr<CpuBackend>> Serve(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint, model::Checkpoint::Open(path));
  return CpuBackend::Create(std::shared_ptr<const model::Checkpoint>(std::move(checkpoint)),
                            kOptions);
}

// llama.cpp's name of a Hugging Face tensor of a qwen2 model, as its converter writes it.
std::string GgufName(const std::string& hf) {
  static const std::map<std::string, std::string> kTop = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"}};
  if (auto it = kTop.find(hf); it != kTop.end()) return it->second;
  static const std::map<std::string, std::string> kBlock = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"}};
  const std::vector<std::string> parts = absl::StrSplit(hf, absl::MaxSplits('.', 3));
  EXPECT_EQ(parts.size(), 4u) << hf;
  return absl::StrCat("blk.", parts[2], ".", kBlock.at(parts[3]));
}

class Qwen2ReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    seed_ = TestSeed();
    dir_ = absl::StrCat(std::filesystem::temp_directory_path().string(), "/qwen2-reference-",
                        getpid());
    model::MakeModelOptions options;
    options.preset = "qwen2-tiny";
    options.out_dir = dir_;
    options.seed = seed_;
    absl::StatusOr<model::ModelConfig> config = model::MakeModel(options);
    ASSERT_TRUE(config.ok()) << config.status();
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  static uint32_t seed_;
  static std::string dir_;
};
uint32_t Qwen2ReferenceTest::seed_ = 0;
std::string Qwen2ReferenceTest::dir_;

TEST_F(Qwen2ReferenceTest, DirectoryMatchesTheFloat64Reference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  absl::StatusOr<std::unique_ptr<CpuBackend>> backend = Serve(dir_);
  ASSERT_TRUE(backend.ok()) << backend.status();
  const model::ModelConfig& config = (*backend)->config();
  ASSERT_EQ(config.architecture, model::Architecture::kQwen2);
  ASSERT_TRUE(config.tie_word_embeddings);
  ASSERT_EQ(config.rope_theta, 1e6f);
  std::mt19937 rng(seed_);
  std::vector<std::vector<int32_t>> sequences;
  for (int length : {1, 9, 40, 130}) {
    std::vector<int32_t>& tokens = sequences.emplace_back(length);
    for (int32_t& t : tokens) {
      t = std::uniform_int_distribution<int32_t>(0, config.vocab_size - 1)(rng);
    }
  }
  const nlohmann::json answer = arbor::testing::RunPythonReference(
      "tests/model/llama_reference.py",
      {{"model_dir", dir_}, {"sequences", sequences}, {"logits", "last"}});
  ASSERT_TRUE(answer.is_object() && answer.contains("results"));
  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<float> got = worker::testing::LastLogits(**backend, sequences[s]).value();
    const std::vector<double> want = answer["results"][s]["logits"][0].get<std::vector<double>>();
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
    }
    EXPECT_LE(worst, 1e-4) << sequences[s].size() << " tokens";
  }
}

TEST_F(Qwen2ReferenceTest, GgufOfTheSameWeightsGivesTheSameLogits) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  absl::StatusOr<std::unique_ptr<model::Checkpoint>> hf = model::Checkpoint::Open(dir_);
  ASSERT_TRUE(hf.ok()) << hf.status();
  const model::ModelConfig& c = (*hf)->config();
  model::testing::GgufBuilder b;
  b.String("general.architecture", "qwen2").String("general.name", "qwen2-tiny");
  b.U32("qwen2.block_count", c.num_layers).U32("qwen2.embedding_length", c.hidden_size);
  b.U32("qwen2.feed_forward_length", c.intermediate_size);
  b.U32("qwen2.attention.head_count", c.num_heads);
  b.U32("qwen2.attention.head_count_kv", c.num_kv_heads);
  b.U32("qwen2.context_length", c.max_position_embeddings);
  b.F32("qwen2.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  b.F32("qwen2.rope.freq_base", c.rope_theta);
  for (const std::string& name : (*hf)->TensorNames()) {
    const model::TensorView t = *(*hf)->Tensor(name);
    ASSERT_EQ(t.dtype, model::DType::kF32) << name;
    b.Tensor(GgufName(name), /*F32=*/0, std::vector<uint64_t>(t.shape.rbegin(), t.shape.rend()),
             std::string(static_cast<const char*>(t.data), t.nbytes));
  }
  const std::string path = dir_ + ".gguf";
  ASSERT_TRUE(base::WriteFileAtomically(path, b.Build()).ok());
  absl::StatusOr<std::unique_ptr<CpuBackend>> from_gguf = Serve(path);
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status();
  EXPECT_EQ((*from_gguf)->config().architecture, model::Architecture::kQwen2);
  EXPECT_TRUE((*from_gguf)->config().tie_word_embeddings);
  absl::StatusOr<std::unique_ptr<CpuBackend>> direct = Serve(dir_);
  ASSERT_TRUE(direct.ok()) << direct.status();
  std::mt19937 rng(seed_);
  std::vector<int32_t> tokens(57);
  for (int32_t& t : tokens) t = std::uniform_int_distribution<int32_t>(0, c.vocab_size - 1)(rng);
  EXPECT_EQ(worker::testing::LastLogits(**from_gguf, tokens).value(),
            worker::testing::LastLogits(**direct, tokens).value());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace arbor::worker
