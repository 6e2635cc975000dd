// The tensors a Hugging Face Llama checkpoint holds for a given ModelConfig: names and shapes
// in the order HF writes them. The loader checks checkpoints against this list and make-model
// writes exactly it, so the two can never disagree.
#ifndef ARBOR_MODEL_LLAMA_TENSORS_H_
#define ARBOR_MODEL_LLAMA_TENSORS_H_

#include <vector>

#include "model/config.h"
#include "model/safetensors_writer.h"
#include "model/tensor.h"

namespace arbor::model {

// model.embed_tokens.weight [vocab, hidden]; per layer N: model.layers.N.input_layernorm.weight
// [hidden], self_attn.{q,k,v,o}_proj.weight, post_attention_layernorm.weight [hidden],
// mlp.{gate,up,down}_proj.weight; model.norm.weight [hidden]; lm_head.weight [vocab, hidden]
// unless tie_word_embeddings. Every spec gets `dtype`.
std::vector<TensorSpec> LlamaTensorSpecs(const ModelConfig& config, DType dtype);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_LLAMA_TENSORS_H_
