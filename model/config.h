// The shape and hyper-parameters of a Llama-family model (Llama, Mistral, SmolLM, Qwen2, Qwen3
// dense; model/architecture.h lists them), as read from a Hugging Face `config.json`
// (+ `generation_config.json`) or a GGUF file's metadata. Every consumer (backends, worker,
// coordinator, make-model) works from this struct, never from the JSON.
#ifndef ARBOR_MODEL_CONFIG_H_
#define ARBOR_MODEL_CONFIG_H_

#include <string>
#include <vector>

#include "model/architecture.h"

namespace arbor::model {

// The largest shapes accepted from a checkpoint's metadata (config.json or GGUF): far beyond any
// real Llama, small enough that nothing sized from them before the tensors are checked (tensor
// lists, per-layer tables) can exhaust memory.
inline constexpr int kMaxLayers = 4096;
inline constexpr int kMaxDim = 1 << 20;  // hidden_size, intermediate_size.
inline constexpr int kMaxHeads = 4096;
inline constexpr int kMaxHeadDim = 4096;
inline constexpr int kMaxVocab = 1 << 24;

// `rope_scaling` of config.json. kLlama3 is Llama 3.1/3.2's frequency-dependent scaling.
struct RopeScaling {
  enum class Type { kNone, kLinear, kLlama3 };
  Type type = Type::kNone;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_max_position_embeddings = 8192;
  // Per-frequency divisors of the rotation frequencies (head_dim / 2 of them), as Llama 3.1+
  // GGUF files carry their llama3 scaling (tensor rope_freqs.weight); empty: none.
  std::vector<float> freq_factors = {};
};

struct ModelConfig {
  std::string name;  // Directory name or `_name_or_path`.
  Architecture architecture = Architecture::kLlama;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;    // num_hidden_layers
  int num_heads = 0;     // num_attention_heads
  int num_kv_heads = 0;  // num_key_value_heads (defaults to num_heads)
  int head_dim = 0;      // head_dim (defaults to hidden_size / num_heads)
  int vocab_size = 0;
  int max_position_embeddings = 0;
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  int bos_token_id = -1;           // -1: the model has none.
  std::vector<int> eos_token_ids;  // Union of config.json and generation_config.json.
  std::string torch_dtype;         // As declared ("bfloat16", "float32", ...), informational.

  // q_proj, k_proj and v_proj carry biases (architecture.h).
  bool qkv_bias() const { return Describe(architecture).qkv_bias; }
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_CONFIG_H_
