// The Hugging Face reference checks the Qwen2 and Qwen3 tests share (hf_reference_check.h).
#include "tests/worker/backend/hf_reference_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "model/checkpoint.h"
#include "nlohmann/json.hpp"
#include "tests/support/python_reference.h"
#include "tests/worker/backend/random_llama.h"

namespace arbor::worker::testing {
namespace {

const CpuBackendOptions kOptions{.kv_blocks = 64, .block_size = 16, .threads = 2};

// llama.cpp's name of a Hugging Face tensor of a Llama-family model, as its converter writes it.
// One table for every architecture: Qwen2's biases and Qwen3's q/k norms are named alike by it.
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
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
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

// `count` tokens drawn uniformly from the vocabulary.
std::vector<int32_t> RandomTokens(int count, int vocab_size, std::mt19937& rng) {
  std::vector<int32_t> tokens(count);
  for (int32_t& t : tokens) t = std::uniform_int_distribution<int32_t>(0, vocab_size - 1)(rng);
  return tokens;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuBackend>> ServeOnCpu(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint, model::Checkpoint::Open(path));
  return CpuBackend::Create(std::shared_ptr<const model::Checkpoint>(std::move(checkpoint)),
                            kOptions);
}

std::string SuiteModelPath(absl::string_view stem) {
  return absl::StrCat(std::filesystem::temp_directory_path().string(), "/", stem, "-", getpid());
}

void ExpectMatchesFloat64Reference(Backend& backend, const std::string& dir, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> sequences;
  for (int length : {1, 9, 40, 130}) {
    sequences.push_back(RandomTokens(length, backend.config().vocab_size, rng));
  }
  const nlohmann::json answer = arbor::testing::RunPythonReference(
      "tests/model/llama_reference.py",
      {{"model_dir", dir}, {"sequences", sequences}, {"logits", "last"}});
  ASSERT_TRUE(answer.is_object() && answer.contains("results"));
  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<float> got = LastLogits(backend, sequences[s]).value();
    const std::vector<double> want = answer["results"][s]["logits"][0].get<std::vector<double>>();
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
    }
    EXPECT_LE(worst, 1e-4) << sequences[s].size() << " tokens";
  }
}

void WriteGgufOfDirectory(const std::string& dir, const std::string& arch, const std::string& name,
                          const std::string& path, const ExtraGgufKeys& extra) {
  absl::StatusOr<std::unique_ptr<model::Checkpoint>> hf = model::Checkpoint::Open(dir);
  ASSERT_TRUE(hf.ok()) << hf.status();
  const model::ModelConfig& c = (*hf)->config();
  model::testing::GgufBuilder b;
  b.String("general.architecture", arch).String("general.name", name);
  b.U32(arch + ".block_count", c.num_layers).U32(arch + ".embedding_length", c.hidden_size);
  b.U32(arch + ".feed_forward_length", c.intermediate_size);
  b.U32(arch + ".attention.head_count", c.num_heads);
  b.U32(arch + ".attention.head_count_kv", c.num_kv_heads);
  if (extra) extra(c, b);
  b.U32(arch + ".context_length", c.max_position_embeddings);
  b.F32(arch + ".attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  b.F32(arch + ".rope.freq_base", c.rope_theta);
  for (const std::string& tensor : (*hf)->TensorNames()) {
    const model::TensorView t = *(*hf)->Tensor(tensor);
    ASSERT_EQ(t.dtype, model::DType::kF32) << tensor;
    b.Tensor(GgufName(tensor), /*F32=*/0, std::vector<uint64_t>(t.shape.rbegin(), t.shape.rend()),
             std::string(static_cast<const char*>(t.data), t.nbytes));
  }
  ASSERT_TRUE(base::WriteFileAtomically(path, b.Build()).ok());
}

void ExpectSameLogitsAsDirectory(Backend& backend, const std::string& dir, uint32_t seed) {
  absl::StatusOr<std::unique_ptr<CpuBackend>> direct = ServeOnCpu(dir);
  ASSERT_TRUE(direct.ok()) << direct.status();
  std::mt19937 rng(seed);
  const std::vector<int32_t> tokens = RandomTokens(57, (*direct)->config().vocab_size, rng);
  EXPECT_EQ(LastLogits(backend, tokens).value(), LastLogits(**direct, tokens).value());
}

}  // namespace arbor::worker::testing
