#include "model/gguf_llama.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace arbor::model {
namespace {

absl::Status KeyError(const GgufFile& file, absl::string_view key, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(file.path(), ": GGUF metadata '", key, "' ", why));
}

// <arch>.<key> as an int in [min, max]; `fallback` when absent and given.
absl::StatusOr<int> ShapeKey(const GgufFile& file, Architecture arch, absl::string_view key,
                             int64_t min, int64_t max, std::optional<int> fallback = std::nullopt) {
  const std::string full = absl::StrCat(Describe(arch).name, ".", key);
  absl::StatusOr<int64_t> value = file.GetInt(full);
  if (absl::IsNotFound(value.status()) && fallback) return *fallback;
  RETURN_IF_ERROR(value.status());
  if (*value < min || *value > max) {
    return KeyError(file, full, absl::StrCat("= ", *value, " is outside [", min, ", ", max, "]"));
  }
  return static_cast<int>(*value);
}

absl::StatusOr<double> FloatKey(const GgufFile& file, Architecture arch, absl::string_view key,
                                double fallback) {
  const std::string full = absl::StrCat(Describe(arch).name, ".", key);
  absl::StatusOr<double> value = file.GetFloat(full);
  if (absl::IsNotFound(value.status())) return fallback;
  RETURN_IF_ERROR(value.status());
  if (!(*value > 0) || !std::isfinite(*value)) {
    return KeyError(file, full, absl::StrCat("= ", *value, " must be positive and finite"));
  }
  return *value;
}

absl::StatusOr<Architecture> CheckArchitecture(const GgufFile& file) {
  ASSIGN_OR_RETURN(const std::string name, file.GetString("general.architecture"));
  const ArchitectureInfo* served = FindByGgufName(name);
  if (served == nullptr) {
    return KeyError(file, "general.architecture",
                    absl::StrCat("is '", name, "'; Arbor serves ", ServedArchitectures()));
  }
  const std::string experts = absl::StrCat(name, ".expert_count");
  if (absl::StatusOr<int64_t> count = file.GetInt(experts); count.ok() && *count > 0) {
    return KeyError(file, experts, "> 0: mixture-of-experts models are not supported");
  }
  return served->id;
}

absl::Status ParseRope(const GgufFile& file, ModelConfig& config) {
  const Architecture arch = config.architecture;
  const std::string prefix = absl::StrCat(Describe(arch).name, ".");
  ASSIGN_OR_RETURN(const double theta, FloatKey(file, arch, "rope.freq_base", 10000.0));
  config.rope_theta = static_cast<float>(theta);
  ASSIGN_OR_RETURN(const int rotary,
                   ShapeKey(file, arch, "rope.dimension_count", 1, 1 << 16, config.head_dim));
  if (rotary != config.head_dim) {
    return KeyError(file, prefix + "rope.dimension_count",
                    absl::StrCat("= ", rotary, " differs from the head size ", config.head_dim,
                                 ": partial rotary embeddings are not supported"));
  }
  absl::StatusOr<std::string> scaling = file.GetString(prefix + "rope.scaling.type");
  if (absl::IsNotFound(scaling.status()) || (scaling.ok() && *scaling == "none")) {
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(scaling.status());
  if (*scaling != "linear") {
    return KeyError(file, prefix + "rope.scaling.type",
                    absl::StrCat("= '", *scaling, "' is not supported (none or linear)"));
  }
  config.rope_scaling.type = RopeScaling::Type::kLinear;
  ASSIGN_OR_RETURN(const double factor, FloatKey(file, arch, "rope.scaling.factor", 1.0));
  config.rope_scaling.factor = static_cast<float>(factor);
  return absl::OkStatus();
}

absl::Status ParseTokenIds(const GgufFile& file, ModelConfig& config) {
  auto id = [&](absl::string_view key) -> absl::StatusOr<std::optional<int>> {
    absl::StatusOr<int64_t> value = file.GetInt(key);
    if (absl::IsNotFound(value.status())) return std::nullopt;
    RETURN_IF_ERROR(value.status());
    if (*value < 0 || *value >= config.vocab_size) {
      return KeyError(
          file, key,
          absl::StrCat("= ", *value, " is outside the vocabulary [0, ", config.vocab_size, ")"));
    }
    return static_cast<int>(*value);
  };
  ASSIGN_OR_RETURN(std::optional<int> bos, id("tokenizer.ggml.bos_token_id"));
  config.bos_token_id = bos.value_or(-1);
  // Llama 3 files name <|eot_id|> and <|eom_id|> apart from <|end_of_text|>: all end a turn.
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    ASSIGN_OR_RETURN(std::optional<int> eos, id(key));
    if (eos && std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), *eos) ==
                   config.eos_token_ids.end()) {
      config.eos_token_ids.push_back(*eos);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ParseConfig(const GgufFile& file) {
  ModelConfig config;
  ASSIGN_OR_RETURN(config.architecture, CheckArchitecture(file));
  const Architecture arch = config.architecture;
  const std::string prefix = absl::StrCat(Describe(arch).name, ".");
  config.name = file.GetString("general.name").value_or("");
  ASSIGN_OR_RETURN(config.num_layers, ShapeKey(file, arch, "block_count", 1, kMaxLayers));
  ASSIGN_OR_RETURN(config.hidden_size, ShapeKey(file, arch, "embedding_length", 1, kMaxDim));
  ASSIGN_OR_RETURN(config.intermediate_size,
                   ShapeKey(file, arch, "feed_forward_length", 1, kMaxDim));
  ASSIGN_OR_RETURN(config.num_heads, ShapeKey(file, arch, "attention.head_count", 1, kMaxHeads));
  ASSIGN_OR_RETURN(config.num_kv_heads, ShapeKey(file, arch, "attention.head_count_kv", 1,
                                                 config.num_heads, config.num_heads));
  if (config.num_heads % config.num_kv_heads != 0) {
    return KeyError(file, prefix + "attention.head_count_kv",
                    absl::StrCat("= ", config.num_kv_heads,
                                 " does not divide head_count = ", config.num_heads));
  }
  ASSIGN_OR_RETURN(const int key_length,
                   ShapeKey(file, arch, "attention.key_length", 2, kMaxHeadDim,
                            config.hidden_size / config.num_heads));
  ASSIGN_OR_RETURN(const int value_length,
                   ShapeKey(file, arch, "attention.value_length", 2, kMaxHeadDim, key_length));
  if (key_length != value_length || key_length % 2 != 0) {
    return KeyError(
        file, prefix + "attention.key_length",
        absl::StrCat("= ", key_length, " must be even and equal value_length = ", value_length));
  }
  config.head_dim = key_length;
  ASSIGN_OR_RETURN(config.max_position_embeddings,
                   ShapeKey(file, arch, "context_length", 1, std::numeric_limits<int>::max()));
  ASSIGN_OR_RETURN(const double eps,
                   FloatKey(file, arch, "attention.layer_norm_rms_epsilon", 1e-5));
  config.rms_norm_eps = static_cast<float>(eps);
  RETURN_IF_ERROR(ParseRope(file, config));
  // The vocabulary: <arch>.vocab_size, else the tokenizer's length, else the embedding's rows.
  absl::StatusOr<int> vocab = ShapeKey(file, arch, "vocab_size", 1, kMaxVocab);
  if (absl::IsNotFound(vocab.status())) {
    if (const GgufValue* tokens = file.Find("tokenizer.ggml.tokens"); tokens != nullptr) {
      vocab = static_cast<int>(tokens->elements.size());
    } else {
      for (const TensorView& t : file.tensors()) {
        if (t.name == "token_embd.weight") vocab = static_cast<int>(t.shape[0]);
      }
    }
  }
  RETURN_IF_ERROR(vocab.status());
  config.vocab_size = *vocab;
  RETURN_IF_ERROR(ParseTokenIds(file, config));
  return config;
}

// The Hugging Face name of a llama.cpp tensor name, or "" when it is not part of a model of
// `arch`.
std::string HfName(absl::string_view name, Architecture arch) {
  static const std::map<std::string, std::string, std::less<>> kTop = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"}};
  if (auto it = kTop.find(name); it != kTop.end()) return it->second;
  static const std::map<std::string, std::string, std::less<>> kBlock = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"}};
  static const std::map<std::string, std::string, std::less<>> kQkvBias = {
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"}};
  static const std::map<std::string, std::string, std::less<>> kQkNorm = {
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"}};
  std::vector<absl::string_view> parts = absl::StrSplit(name, absl::MaxSplits('.', 2));
  int layer = 0;
  if (parts.size() != 3 || parts[0] != "blk" || !absl::SimpleAtoi(parts[1], &layer) || layer < 0) {
    return "";
  }
  const std::string prefix = absl::StrCat("model.layers.", layer, ".");
  if (auto it = kBlock.find(parts[2]); it != kBlock.end()) return prefix + it->second;
  if (Describe(arch).qkv_bias) {
    if (auto it = kQkvBias.find(parts[2]); it != kQkvBias.end()) return prefix + it->second;
  }
  if (Describe(arch).qk_norm) {
    if (auto it = kQkNorm.find(parts[2]); it != kQkNorm.end()) return prefix + it->second;
  }
  return "";
}

}  // namespace

std::unique_ptr<char[]> UnpermuteRopeRows(const TensorView& view, int heads) {
  const int64_t rows = view.shape[0];
  const size_t row_bytes = view.nbytes / static_cast<size_t>(rows);
  const int64_t d = rows / heads, half = d / 2;
  auto out = std::make_unique<char[]>(view.nbytes);
  const char* src = static_cast<const char*>(view.data);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t t = 0; t < 2; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        std::memcpy(out.get() + (h * d + t * half + i) * row_bytes,
                    src + (h * d + 2 * i + t) * row_bytes, row_bytes);
      }
    }
  }
  return out;
}

namespace {

// rope_freqs.weight: head_dim / 2 positive, finite f32 divisors of the rotation frequencies (how
// llama.cpp's converter stores Llama 3.1+ llama3 scaling).
absl::StatusOr<std::vector<float>> RopeFreqFactors(const GgufFile& file, const TensorView& tensor,
                                                   int head_dim) {
  const std::string where = absl::StrCat(file.path(), ": GGUF tensor 'rope_freqs.weight'");
  if (tensor.dtype != DType::kF32 || tensor.shape.size() != 1 || tensor.shape[0] != head_dim / 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " must be F32 with head_dim / 2 = ", head_dim / 2, " values"));
  }
  std::vector<float> factors(head_dim / 2);
  std::memcpy(factors.data(), tensor.data, factors.size() * sizeof(float));
  for (size_t i = 0; i < factors.size(); ++i) {
    if (!(factors[i] > 0.0f) || !std::isfinite(factors[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "[", i, "] = ", factors[i], " must be positive and finite"));
    }
  }
  return factors;
}

}  // namespace

absl::StatusOr<GgufLlama> MapGgufLlama(const GgufFile& file) {
  GgufLlama model;
  ASSIGN_OR_RETURN(model.config, ParseConfig(file));
  bool has_output = false;
  for (const TensorView& tensor : file.tensors()) {
    if (tensor.name == "rope_freqs.weight") {
      ASSIGN_OR_RETURN(model.config.rope_scaling.freq_factors,
                       RopeFreqFactors(file, tensor, model.config.head_dim));
      continue;
    }
    const std::string name = HfName(tensor.name, model.config.architecture);
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file.path(), ": GGUF tensor '", tensor.name, "' is not part of a ",
                       Describe(model.config.architecture).family, " model"));
    }
    TensorView view = tensor;
    view.name = name;
    // Only some converters permute (llama's); others keep Hugging Face's rows (NEOX RoPE).
    const bool is_q = absl::EndsWith(name, "q_proj.weight");
    if (Describe(model.config.architecture).gguf_permuted_qk &&
        (is_q || absl::EndsWith(name, "k_proj.weight"))) {
      const int heads = is_q ? model.config.num_heads : model.config.num_kv_heads;
      if (view.shape.size() != 2 || view.shape[0] % (2 * heads) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(file.path(), ": GGUF tensor '", tensor.name,
                                                       "' does not split into ", heads,
                                                       " heads of an even number of rows"));
      }
      model.owned.push_back(UnpermuteRopeRows(view, heads));
      view.data = model.owned.back().get();
    }
    has_output |= name == "lm_head.weight";
    model.tensors.emplace(name, std::move(view));
  }
  model.config.tie_word_embeddings = !has_output;
  // Informational, like config.json's torch_dtype: the type of the first layer's MLP weights.
  auto up = model.tensors.find("model.layers.0.mlp.up_proj.weight");
  model.config.torch_dtype = up == model.tensors.end() ? "gguf" : DTypeName(up->second.dtype);
  return model;
}

}  // namespace arbor::model
