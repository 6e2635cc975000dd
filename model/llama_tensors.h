// The tensors a Hugging Face Llama (or Qwen2: the same plus q/k/v biases; Qwen3: plus per-head q/k
// norm weights) checkpoint holds for a given ModelConfig: names and shapes in the order HF writes
// them. The loader checks checkpoints against this list and make-model writes exactly it, so the
// two can never disagree.
#ifndef ARBOR_MODEL_LLAMA_TENSORS_H_
#define ARBOR_MODEL_LLAMA_TENSORS_H_

#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors_writer.h"
#include "model/tensor.h"

namespace arbor::model {

// The tensors outside the layers.
inline constexpr char kEmbedTokensName[] = "model.embed_tokens.weight";
inline constexpr char kFinalNormName[] = "model.norm.weight";
inline constexpr char kLmHeadName[] = "lm_head.weight";

// The names of layer N's tensors: "model.layers.N." then input_layernorm.weight,
// self_attn.{q,k,v,o}_proj.weight, post_attention_layernorm.weight, mlp.{gate,up,down}_proj.weight,
// self_attn.{q,k,v}_proj.bias (present when the config's qkv_bias()) and
// self_attn.{q,k}_norm.weight (present when its architecture's qk_norm). The loaders of every
// backend and the checkpoint list read the names from here only.
struct LlamaLayerNames {
  std::string attn_norm, q, k, v, o, mlp_norm, gate, up, down, q_bias, k_bias, v_bias, q_norm,
      k_norm;
};
LlamaLayerNames LlamaLayerTensorNames(int layer);

// model.embed_tokens.weight [vocab, hidden]; per layer N: model.layers.N.input_layernorm.weight
// [hidden], self_attn.{q,k,v,o}_proj.weight, post_attention_layernorm.weight [hidden],
// mlp.{gate,up,down}_proj.weight, with qkv_bias() self_attn.{q,k,v}_proj.bias [q or kv dim] after
// their weights, with qk_norm self_attn.{q,k}_norm.weight [head_dim] after o_proj;
// model.norm.weight [hidden]; lm_head.weight [vocab, hidden] unless
// tie_word_embeddings. Every spec gets `dtype`.
std::vector<TensorSpec> LlamaTensorSpecs(const ModelConfig& config, DType dtype);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_LLAMA_TENSORS_H_
