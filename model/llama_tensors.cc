#include "model/llama_tensors.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace arbor::model {

std::vector<TensorSpec> LlamaTensorSpecs(const ModelConfig& config, DType dtype) {
  const int64_t hidden = config.hidden_size;
  const int64_t q_dim = static_cast<int64_t>(config.num_heads) * config.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(config.num_kv_heads) * config.head_dim;
  const int64_t ffn = config.intermediate_size;
  std::vector<TensorSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    specs.push_back(TensorSpec{std::move(name), dtype, std::move(shape)});
  };
  add("model.embed_tokens.weight", {config.vocab_size, hidden});
  for (int layer = 0; layer < config.num_layers; ++layer) {
    const std::string prefix = absl::StrCat("model.layers.", layer, ".");
    add(prefix + "input_layernorm.weight", {hidden});
    add(prefix + "self_attn.q_proj.weight", {q_dim, hidden});
    add(prefix + "self_attn.k_proj.weight", {kv_dim, hidden});
    add(prefix + "self_attn.v_proj.weight", {kv_dim, hidden});
    add(prefix + "self_attn.o_proj.weight", {hidden, q_dim});
    add(prefix + "post_attention_layernorm.weight", {hidden});
    add(prefix + "mlp.gate_proj.weight", {ffn, hidden});
    add(prefix + "mlp.up_proj.weight", {ffn, hidden});
    add(prefix + "mlp.down_proj.weight", {hidden, ffn});
  }
  add("model.norm.weight", {hidden});
  if (!config.tie_word_embeddings) add("lm_head.weight", {config.vocab_size, hidden});
  return specs;
}

}  // namespace arbor::model
