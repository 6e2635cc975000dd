#include "model/llama_tensors.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace arbor::model {

LlamaLayerNames LlamaLayerTensorNames(int layer) {
  const std::string p = absl::StrCat("model.layers.", layer, ".");
  return {p + "input_layernorm.weight",  p + "self_attn.q_proj.weight",
          p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight",
          p + "self_attn.o_proj.weight", p + "post_attention_layernorm.weight",
          p + "mlp.gate_proj.weight",    p + "mlp.up_proj.weight",
          p + "mlp.down_proj.weight",    p + "self_attn.q_proj.bias",
          p + "self_attn.k_proj.bias",   p + "self_attn.v_proj.bias",
          p + "self_attn.q_norm.weight", p + "self_attn.k_norm.weight"};
}

std::vector<TensorSpec> LlamaTensorSpecs(const ModelConfig& config, DType dtype) {
  const int64_t hidden = config.hidden_size;
  const int64_t q_dim = static_cast<int64_t>(config.num_heads) * config.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(config.num_kv_heads) * config.head_dim;
  const int64_t ffn = config.intermediate_size;
  std::vector<TensorSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    specs.push_back(TensorSpec{std::move(name), dtype, std::move(shape)});
  };
  add(kEmbedTokensName, {config.vocab_size, hidden});
  for (int layer = 0; layer < config.num_layers; ++layer) {
    const LlamaLayerNames n = LlamaLayerTensorNames(layer);
    add(n.attn_norm, {hidden});
    add(n.q, {q_dim, hidden});
    if (config.qkv_bias()) add(n.q_bias, {q_dim});
    add(n.k, {kv_dim, hidden});
    if (config.qkv_bias()) add(n.k_bias, {kv_dim});
    add(n.v, {kv_dim, hidden});
    if (config.qkv_bias()) add(n.v_bias, {kv_dim});
    add(n.o, {hidden, q_dim});
    if (Describe(config.architecture).qk_norm) {
      add(n.q_norm, {config.head_dim});
      add(n.k_norm, {config.head_dim});
    }
    add(n.mlp_norm, {hidden});
    add(n.gate, {ffn, hidden});
    add(n.up, {ffn, hidden});
    add(n.down, {hidden, ffn});
  }
  add(kFinalNormName, {hidden});
  if (!config.tie_word_embeddings) add(kLmHeadName, {config.vocab_size, hidden});
  return specs;
}

}  // namespace arbor::model
