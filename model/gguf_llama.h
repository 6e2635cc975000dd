// A GGUF file of the `llama` or `qwen2` architecture seen as Arbor's model: its `llama.*` (or
// `qwen2.*`) metadata as a ModelConfig and its tensors under the Hugging Face names the backends
// look up (blk.3.attn_q.weight → model.layers.3.self_attn.q_proj.weight; qwen2's
// blk.3.attn_q.bias → model.layers.3.self_attn.q_proj.bias). Quantized tensors keep their blocks;
// backends decide what to compute with.
//
// For `llama`, llama.cpp's converter permutes the rows of attn_q and attn_k of each head so that
// its interleaved RoPE rotates dimensions (2i, 2i+1) together. Arbor rotates Hugging Face's
// halves (i, i + d/2), so those two tensors are copied here with the permutation undone (whole
// rows, so their blocks stay as they are). The `qwen2` converter keeps Hugging Face's rows (its
// models use NEOX-style RoPE, which is the rotate-half one), so nothing is undone there.
#ifndef ARBOR_MODEL_GGUF_LLAMA_H_
#define ARBOR_MODEL_GGUF_LLAMA_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/config.h"
#include "model/gguf.h"
#include "model/tensor.h"

namespace arbor::model {

struct GgufLlama {
  ModelConfig config;
  // Every tensor of the file under its Hugging Face name (views into the file, or into `owned`).
  std::map<std::string, TensorView, std::less<>> tensors;
  std::vector<std::unique_ptr<char[]>> owned;  // The un-permuted attn_q / attn_k rows.
};

// Fails, naming the key or tensor, on an architecture other than llama and qwen2, missing or
// out-of-range shape keys, features Arbor does not implement (experts, partial rotary, rope
// scaling other than linear), a malformed rope_freqs.weight, and tensors that are not part of a
// model of the architecture (a bias in a llama file). Shapes are checked against the config by
// the caller (Checkpoint), as for safetensors.
absl::StatusOr<GgufLlama> MapGgufLlama(const GgufFile& file);

// Undoes llama.cpp's row permutation of a q or k projection with `heads` heads of `rows / heads`
// rows each: row h·d + t·d/2 + i of the result is row h·d + 2i + t of `view` (t ∈ {0, 1}).
// `view` must be 2-D with rows divisible by 2·heads.
std::unique_ptr<char[]> UnpermuteRopeRows(const TensorView& view, int heads);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_GGUF_LLAMA_H_
