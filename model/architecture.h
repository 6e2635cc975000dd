// The architectures Arbor serves, each described once: the names a checkpoint gives it (GGUF's
// general.architecture, config.json's `architectures` and `model_type`), how its config switches
// features, and how its weights and forward differ from Llama's. The readers (config_json.cc,
// gguf_llama.cc), the tensor list (llama_tensors.cc) and the backends read this table rather
// than testing for an architecture by name, so an architecture whose forward Arbor already
// computes is one row here.
#ifndef ARBOR_MODEL_ARCHITECTURE_H_
#define ARBOR_MODEL_ARCHITECTURE_H_

#include <array>
#include <string>

#include "absl/strings/string_view.h"

namespace arbor::model {

enum class Architecture { kLlama, kQwen2, kQwen3 };

struct ArchitectureInfo {
  Architecture id;
  // GGUF's general.architecture (which prefixes its metadata keys: "qwen2.block_count") and the
  // config.json model_type Arbor writes.
  absl::string_view name;
  absl::string_view family;    // In messages: "Qwen2".
  absl::string_view examples;  // The models it serves, in messages.
  // config.json `architectures` entries and `model_type` values read as this architecture; the
  // first class is the one Arbor writes. Empty entries pad.
  std::array<absl::string_view, 2> hf_classes;
  std::array<absl::string_view, 2> model_types;
  // q_proj, k_proj and v_proj always carry biases (config.json has no switch for them).
  bool qkv_bias = false;
  // config.json always carries a sliding_window size and use_sliding_window says whether it
  // applies (rather than sliding_window being null when off).
  bool sliding_window_switch = false;
  // llama.cpp's converter permuted the q and k rows for its interleaved RoPE; the reader undoes
  // it so the backends see Hugging Face's rotate-half rows.
  bool gguf_permuted_qk = false;
  // Each head's q and k vectors are RMS-normalised (the model's rms_norm_eps) with a learned
  // [head_dim] weight per layer, after the projections and before RoPE:
  // self_attn.{q,k}_norm.weight, GGUF blk.N.attn_{q,k}_norm.weight.
  bool qk_norm = false;
};

inline constexpr ArchitectureInfo kArchitectures[] = {
    {.id = Architecture::kLlama,
     .name = "llama",
     .family = "Llama",
     .examples = "Llama 2/3, SmolLM, TinyLlama, Mistral without sliding window",
     .hf_classes = {"LlamaForCausalLM", "MistralForCausalLM"},
     .model_types = {"llama", "mistral"},
     .gguf_permuted_qk = true},
    {.id = Architecture::kQwen2,
     .name = "qwen2",
     .family = "Qwen2",
     .examples = "Qwen2, Qwen2.5",
     .hf_classes = {"Qwen2ForCausalLM", ""},
     .model_types = {"qwen2", ""},
     .qkv_bias = true,
     .sliding_window_switch = true},
    {.id = Architecture::kQwen3,
     .name = "qwen3",
     .family = "Qwen3",
     .examples = "Qwen3 dense models",
     .hf_classes = {"Qwen3ForCausalLM", ""},
     .model_types = {"qwen3", ""},
     .sliding_window_switch = true,
     .qk_norm = true},
};

// Listed in Architecture's order, so Describe indexes the table; the compiler checks it.
constexpr bool ArchitecturesInOrder() {
  for (size_t i = 0; i < std::size(kArchitectures); ++i) {
    if (static_cast<size_t>(kArchitectures[i].id) != i) return false;
  }
  return true;
}
static_assert(ArchitecturesInOrder(), "kArchitectures must list every Architecture in order");

constexpr const ArchitectureInfo& Describe(Architecture architecture) {
  return kArchitectures[static_cast<size_t>(architecture)];
}

// The architecture whose GGUF name, config.json class or model_type is `name`; null for none.
const ArchitectureInfo* FindByGgufName(absl::string_view name);
const ArchitectureInfo* FindByHfClass(absl::string_view name);
const ArchitectureInfo* FindByModelType(absl::string_view name);

// For messages: "the 'llama' architecture (Llama 2/3, ...) and 'qwen2' (Qwen2, Qwen2.5)".
std::string ServedArchitectures();
// For messages: every config.json class ("LlamaForCausalLM, ...") or model_type served.
std::string ServedHfClasses();
std::string ServedModelTypes();

}  // namespace arbor::model

#endif  // ARBOR_MODEL_ARCHITECTURE_H_
