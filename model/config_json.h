// Reading and writing Hugging Face `config.json` + `generation_config.json` as a ModelConfig.
//
// Supported: LlamaForCausalLM (Llama 2, Llama 3.x, SmolLM, TinyLlama...), MistralForCausalLM
// without a sliding window (Mistral 7B v0.2+), which has the identical structure,
// Qwen2ForCausalLM (Qwen2, Qwen2.5: q/k/v biases) and Qwen3ForCausalLM (Qwen3 dense: per-head
// q/k RMSNorm), both with use_sliding_window false; model/architecture.h lists them. Anything that
// would change the forward pass and that Arbor does not implement (Llama attention or MLP biases,
// mixture of experts, sliding-window attention, an activation other than SiLU, rope scaling
// other than linear or llama3) is refused with an INVALID_ARGUMENT naming the field, so a model
// never loads and then silently computes something else.
#ifndef ARBOR_MODEL_CONFIG_JSON_H_
#define ARBOR_MODEL_CONFIG_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/config.h"

namespace arbor::model {

// Parses config.json text and, when non-empty, generation_config.json text (its eos_token_id,
// int or list, is merged into eos_token_ids; its bos_token_id fills a missing one).
absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view config_json,
                                             absl::string_view generation_config_json = "");

// Reads DIR/config.json (required) and DIR/generation_config.json (optional). `name` is the
// config's `_name_or_path`, else the directory's base name.
absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& dir);

// config.json text for `config` (architectures LlamaForCausalLM, Qwen2ForCausalLM or
// Qwen3ForCausalLM: its architecture's first class), which ParseModelConfig reads back to an
// equal ModelConfig.
std::string ModelConfigToJson(const ModelConfig& config);

// generation_config.json text: bos and the eos list.
std::string GenerationConfigToJson(const ModelConfig& config);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_CONFIG_JSON_H_
