// Qwen3 (dense: Llama's forward without biases, each head's q and k RMS-normalised with its own
// learned weight before RoPE) end to end on the CPU backend. The test writes a Hugging Face
// directory as Qwen3's look (config.json with model_type qwen3, head_dim 24 beside hidden 64 / 4
// heads, θ 1e6, tied embeddings, sliding_window null; random f32 weights in model.safetensors,
// q_norm and k_norm included); loaded as a user's directory is, its logits match the independent
// float64 PyTorch forward (tests/model/llama_reference.py, which applies the q/k norms it finds)
// at several prompt lengths. The same weights written as llama.cpp's converter writes a qwen3
// GGUF (qwen3.* keys, key_length / value_length, blk.N.attn_{q,k}_norm.weight, q/k rows not
// permuted) give the very same logits. The norm weights are spread wide (0.5 around 1), so a
// forward that skips them misses by far more than the tolerance.
//
// Tolerance: 1e-4 · (1 + |logit|) (fp32 against float64), as the Qwen2 test's; the checks and
// the tolerance both tests share are hf_reference_check.h's.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "model/checkpoint.h"
#include "model/llama_tensors.h"
#include "model/safetensors_writer.h"
#include "nlohmann/json.hpp"
#include "tests/model/gguf_builder.h"
#include "tests/support/test_seed.h"
#include "tests/worker/backend/hf_reference_check.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cpu_backend.h"

namespace arbor::worker {
namespace {

// 2 layers, hidden 64, 4 query / 2 KV heads of 24 (not 64 / 4), ffn 128, vocab 512.
model::ModelConfig Qwen3Config() {
  model::ModelConfig c = testing::TinyConfig();
  c.name = "qwen3-random";
  c.architecture = model::Architecture::kQwen3;
  c.head_dim = 24;
  c.rope_theta = 1e6f;
  c.rope_scaling = {};
  c.rms_norm_eps = 1e-6f;
  c.tie_word_embeddings = true;
  return c;
}

// config.json as Qwen3-0.6B's reads, written here rather than by Arbor's own writer.
std::string ConfigJson(const model::ModelConfig& c) {
  nlohmann::json j = {{"architectures", {"Qwen3ForCausalLM"}},
                      {"model_type", "qwen3"},
                      {"attention_bias", false},
                      {"attention_dropout", 0.0},
                      {"bos_token_id", 0},
                      {"eos_token_id", 1},
                      {"head_dim", c.head_dim},
                      {"hidden_act", "silu"},
                      {"hidden_size", c.hidden_size},
                      {"intermediate_size", c.intermediate_size},
                      {"max_position_embeddings", c.max_position_embeddings},
                      {"max_window_layers", c.num_layers},
                      {"num_attention_heads", c.num_heads},
                      {"num_hidden_layers", c.num_layers},
                      {"num_key_value_heads", c.num_kv_heads},
                      {"rms_norm_eps", c.rms_norm_eps},
                      {"rope_scaling", nullptr},
                      {"rope_theta", c.rope_theta},
                      {"sliding_window", nullptr},
                      {"tie_word_embeddings", c.tie_word_embeddings},
                      {"torch_dtype", "float32"},
                      {"use_sliding_window", false},
                      {"vocab_size", c.vocab_size}};
  return j.dump(2);
}

// Writes a Qwen3 directory of random f32 weights to `dir`: config.json, and model.safetensors with
// a Llama's tensors of Qwen3Config's shape plus, unless `without_qk_norms`, each layer's
// self_attn.{q,k}_norm.weight. The norm weights are listed and drawn here, not taken from Arbor's
// architecture table, so that a table without them cannot make the directory agree with it.
void WriteDirectory(const std::string& dir, uint32_t seed, bool without_qk_norms = false) {
  std::filesystem::create_directories(dir);
  const model::ModelConfig config = Qwen3Config();
  ASSERT_TRUE(base::WriteFileAtomically(dir + "/config.json", ConfigJson(config)).ok());
  model::ModelConfig llama = config;
  llama.architecture = model::Architecture::kLlama;
  std::mt19937 rng(seed);
  const testing::RandomLlama base(llama, /*bf16=*/false, rng);
  const TensorLookup lookup = base.Lookup();
  std::vector<model::TensorSpec> specs = model::LlamaTensorSpecs(llama, model::DType::kF32);
  std::map<std::string, std::vector<float>> norms;
  for (int l = 0; !without_qk_norms && l < config.num_layers; ++l) {
    for (const char* which : {"q_norm", "k_norm"}) {
      const std::string name = absl::StrCat("model.layers.", l, ".self_attn.", which, ".weight");
      std::normal_distribution<float> normal(1.0f, 0.5f);
      std::vector<float>& values = norms[name];
      for (int i = 0; i < config.head_dim; ++i) values.push_back(normal(rng));
      specs.push_back({name, model::DType::kF32, {config.head_dim}});
    }
  }
  absl::StatusOr<std::unique_ptr<model::SafetensorsWriter>> writer =
      model::SafetensorsWriter::Create(dir + "/model.safetensors", specs, {{"format", "pt"}});
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const model::TensorSpec& spec : specs) {
    if (auto it = norms.find(spec.name); it != norms.end()) {
      ASSERT_TRUE((*writer)->Append(it->second.data(), it->second.size() * sizeof(float)).ok());
      continue;
    }
    absl::StatusOr<model::TensorView> t = lookup(spec.name);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE((*writer)->Append(t->data, t->nbytes).ok()) << spec.name;
  }
  ASSERT_TRUE((*writer)->Finish().ok());
}

class Qwen3ReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    seed_ = TestSeed();
    dir_ = testing::SuiteModelPath("qwen3-reference");
    WriteDirectory(dir_, seed_);
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  static uint32_t seed_;
  static std::string dir_;
};
uint32_t Qwen3ReferenceTest::seed_ = 0;
std::string Qwen3ReferenceTest::dir_;

TEST_F(Qwen3ReferenceTest, DirectoryMatchesTheFloat64Reference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  absl::StatusOr<std::unique_ptr<CpuBackend>> backend = testing::ServeOnCpu(dir_);
  ASSERT_TRUE(backend.ok()) << backend.status();
  const model::ModelConfig& config = (*backend)->config();
  ASSERT_EQ(config.architecture, model::Architecture::kQwen3);
  ASSERT_EQ(config.head_dim, 24);
  ASSERT_TRUE(config.tie_word_embeddings);
  testing::ExpectMatchesFloat64Reference(**backend, dir_, seed_);
}

TEST_F(Qwen3ReferenceTest, GgufOfTheSameWeightsGivesTheSameLogits) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const std::string path = dir_ + ".gguf";
  // A head is 24 wide, not hidden / heads: the GGUF states it, as llama.cpp's converter does.
  const auto head_size = [](const model::ModelConfig& c, model::testing::GgufBuilder& b) {
    b.U32("qwen3.attention.key_length", c.head_dim);
    b.U32("qwen3.attention.value_length", c.head_dim);
  };
  ASSERT_NO_FATAL_FAILURE(
      testing::WriteGgufOfDirectory(dir_, "qwen3", "qwen3-random", path, head_size));
  absl::StatusOr<std::unique_ptr<CpuBackend>> from_gguf = testing::ServeOnCpu(path);
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status();
  EXPECT_EQ((*from_gguf)->config().architecture, model::Architecture::kQwen3);
  EXPECT_EQ((*from_gguf)->config().head_dim, 24);
  EXPECT_TRUE((*from_gguf)->config().tie_word_embeddings);
  testing::ExpectSameLogitsAsDirectory(**from_gguf, dir_, seed_);
  std::filesystem::remove(path);
}

// A Qwen3 directory without its q/k norm weights is refused by name, not served as a Qwen2.
TEST_F(Qwen3ReferenceTest, RefusesADirectoryWithoutItsQkNorms) {
  const std::string other = dir_ + "-no-norms";
  WriteDirectory(other, seed_, /*without_qk_norms=*/true);
  absl::StatusOr<std::unique_ptr<model::Checkpoint>> checkpoint = model::Checkpoint::Open(other);
  EXPECT_FALSE(checkpoint.ok());
  EXPECT_NE(checkpoint.status().message().find("self_attn.q_norm.weight' is missing"),
            std::string::npos)
      << checkpoint.status();
  std::filesystem::remove_all(other);
}

}  // namespace
}  // namespace arbor::worker
