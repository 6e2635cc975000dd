// Test support: a random Llama model held in memory (f32 or bf16 weights, or GGUF blocks, Hugging
// Face tensor names; with q/k/v biases when the config is a Qwen2's, per-head q/k norm weights
// when a Qwen3's) and an independent float64 forward over one dense, unpaged sequence that
// records the same named intermediates as the backends' TensorTap, so a backend can be checked
// tensor by tensor without any file or Python.
#ifndef ARBOR_TESTS_WORKER_BACKEND_RANDOM_LLAMA_H_
#define ARBOR_TESTS_WORKER_BACKEND_RANDOM_LLAMA_H_

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/config.h"
#include "model/dtype.h"
#include "worker/backend/cpu_backend.h"

namespace arbor::worker::testing {

// tiny: 2 layers, hidden 64, 4/2 heads × 16, ffn 128, vocab 512, Llama-3 RoPE scaling with a
// short original context so all three frequency bands occur.
model::ModelConfig TinyConfig();

class RandomLlama {
 public:
  RandomLlama(const model::ModelConfig& config, bool bf16, std::mt19937& rng);

  const model::ModelConfig& config() const { return config_; }
  TensorLookup Lookup() const;
  // The weight as the backend reads it (bf16-rounded when bf16), in double.
  double At(const std::string& name, int64_t i) const;
  int64_t bytes() const;

 private:
  void Add(const std::string& name, std::vector<int64_t> shape, double scale, double offset,
           std::mt19937& rng);

  model::ModelConfig config_;
  bool bf16_;
  std::map<std::string, std::vector<int64_t>> shapes_;
  std::map<std::string, std::vector<float>> f32_;
  std::map<std::string, std::vector<uint16_t>> bf16_data_;
};

// A RandomLlama (bf16) whose weight matrices are random GGUF blocks instead: random integers and
// f16 scales sized so that every weight stays below 0.2 in magnitude (random scales would blow
// the activations up). Norms stay the base model's, and so does the embedding table unless the
// head is tied to it.
class RandomBlockLlama {
 public:
  // `types`: q, k, v, o, gate, up, down (every layer) and the head (lm_head, or the tied
  // embedding table) in turn.
  RandomBlockLlama(const model::ModelConfig& config, const std::vector<model::DType>& types,
                   std::mt19937& rng);

  TensorLookup Lookup() const;

 private:
  struct Blocks {
    model::DType dtype = model::DType::kQ8_0;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  void SetBlocks(const std::string& name, model::DType dtype, int64_t rows, int64_t cols,
                 std::mt19937& rng);

  RandomLlama base_;
  std::map<std::string, Blocks> blocks_;
};

struct Float64Forward {
  // Name (as in backend.h's TensorTap) → [tokens, cols] row-major. "logits" has every position.
  std::map<std::string, std::vector<double>> tensors;
  std::vector<double> last_scores;  // [heads, tokens] of the last query, last layer.
};

Float64Forward ForwardFloat64(const RandomLlama& model, const std::vector<int32_t>& tokens);

// The logits after `tokens`, computed cold by `backend` in a fresh KV sequence.
absl::StatusOr<std::vector<float>> LastLogits(Backend& backend, const std::vector<int32_t>& tokens);

}  // namespace arbor::worker::testing

#endif  // ARBOR_TESTS_WORKER_BACKEND_RANDOM_LLAMA_H_
