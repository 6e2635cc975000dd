// A Llama checkpoint opened for a backend: a Hugging Face directory (config.json (+
// generation_config.json) and model.safetensors or a sharded model.safetensors.index.json) or a
// GGUF file (gguf_llama.h maps it onto the same config and tensor names). Every tensor is checked
// against the config before anything is handed out, then served as a zero-copy view into the
// memory-mapped files (GGUF's quantized tensors stay in their blocks).
#ifndef ARBOR_MODEL_CHECKPOINT_H_
#define ARBOR_MODEL_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/config.h"
#include "model/gguf.h"
#include "model/safetensors.h"
#include "model/tensor.h"

namespace arbor::model {

class Checkpoint {
 public:
  // Called as the weights are scanned: bytes checked so far and in all (monotone, ends equal).
  using ProgressCallback = std::function<void(uint64_t bytes_checked, uint64_t total_bytes)>;

  // Opens `path`, a directory or a GGUF file. Errors, each naming the file and field or tensor:
  // config problems (see config_json.h, gguf_llama.h); NOT_FOUND without model.safetensors or
  // model.safetensors.index.json; a malformed safetensors or GGUF file (see safetensors.h,
  // gguf.h); a shard named in the index that lacks the tensor or escapes the directory; a tensor
  // present in two shards; an expected Llama tensor missing or mis-shaped; a tensor Arbor would
  // not use (it would change the model); a NaN or infinite weight. The scan touches every weight
  // once (a quantized block: its scales), which also pages the files in.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& path,
                                                          ProgressCallback progress = {});

  // The directory or GGUF file opened.
  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  // A view of `name` (e.g. "model.layers.0.mlp.up_proj.weight", GGUF files included), valid
  // while this object lives; NOT_FOUND naming it otherwise.
  absl::StatusOr<TensorView> Tensor(absl::string_view name) const;
  // The output projection [vocab, hidden]: lm_head.weight, or the embedding when tied.
  const TensorView& LmHead() const;
  // Names of every tensor served, sorted.
  std::vector<std::string> TensorNames() const;
  // Bytes of weights over all served tensors.
  uint64_t weight_bytes() const { return weight_bytes_; }
  // One line for the start-up log: architecture, name, layers, heads, hidden size, context,
  // vocabulary and the tensors' types as stored, e.g. "qwen2 'qwen2-tiny': 2 layers, 4 query /
  // 2 KV heads × 16, hidden 64, context 4096, vocab 512, tied embeddings; tensors F32 ×23".
  std::string Describe() const;

 private:
  // Every tensor present, with the file it came from (for error messages).
  using TensorSources = std::map<std::string, std::pair<TensorView, std::string>, std::less<>>;

  Checkpoint() = default;
  absl::Status OpenSafetensors(TensorSources& found);
  absl::Status OpenGguf(TensorSources& found);
  // Keeps the tensors the config names, after checking their shapes; refuses the rest.
  absl::Status Adopt(TensorSources& found);
  absl::Status CheckFinite(const ProgressCallback& progress) const;

  std::string path_;
  ModelConfig config_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unique_ptr<GgufFile> gguf_;
  std::vector<std::unique_ptr<char[]>> owned_;  // GGUF tensors rewritten at load.
  std::map<std::string, TensorView, std::less<>> tensors_;
  uint64_t weight_bytes_ = 0;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_CHECKPOINT_H_
