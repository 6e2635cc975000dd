// `arbor make-model`: writes a complete, loadable Llama (or, with `qwen2-tiny`, Qwen2: q/k/v
// biases, ChatML specials and template) checkpoint directory with random weights (config.json,
// generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json) for tests, the
// demo and benchmarks, since nothing can be downloaded.
//
// The weights are random but shaped so that next-token distributions cover every entropix
// quadrant (see synthetic_weights.h). The tokenizer is a byte-level BPE trained on the built-in
// corpus; its vocabulary is padded to the model's (see make_model.cc for the id layout).
#ifndef ARBOR_MODEL_MAKE_MODEL_H_
#define ARBOR_MODEL_MAKE_MODEL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/config.h"
#include "model/tensor.h"

namespace arbor::model {

// "tiny", "small", "llama-3.2-1b-shape", "qwen2-tiny".
std::vector<std::string> MakeModelPresets();
// The config of a preset (special token ids included); INVALID_ARGUMENT naming unknown ones.
absl::StatusOr<ModelConfig> PresetConfig(absl::string_view preset);

struct MakeModelOptions {
  std::string preset = "tiny";
  std::string out_dir;         // Created if absent; existing checkpoint files are overwritten.
  uint64_t seed = 0;           // Same preset, seed, gain and dtype give the same files.
  float gain = 1.0f;           // Scales every logit (the final norm's weight); 0 gives uniform.
  std::optional<DType> dtype;  // Default: F32 for tiny and small, BF16 for llama-3.2-1b-shape.
  // Weight bytes written so far and in all, called after every chunk.
  std::function<void(uint64_t written, uint64_t total)> progress;
};

// Writes the checkpoint directory and returns its config.
absl::StatusOr<ModelConfig> MakeModel(const MakeModelOptions& options);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_MAKE_MODEL_H_
