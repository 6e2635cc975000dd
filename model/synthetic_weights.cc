#include "model/synthetic_weights.h"

#include <cmath>
#include <string>

#include "absl/strings/match.h"

namespace arbor::model {
namespace {

// Row norm of a strong token's lm_head row: at the largest S share the top strong logit stands
// ~40 nats above the tail (certain), at the smallest ~0.4 (flat).
constexpr float kStrongNorm = 10.0f;
// Row norm of a weak token: tail logits have a standard deviation of ~0.1 nats, flat enough
// for varentropy < 0.1 bits² when no strong token stands out.
constexpr float kWeakNorm = 0.1f;
// One token in kStrongStride (among the first three quarters of the vocabulary, away from the
// special tokens at its end) is strong.
constexpr uint64_t kStrongStride = 32;
// Log-uniform range of the S-mass scale of weak tokens' embeddings, and strong tokens' value.
constexpr float kSignalMin = 0.01f, kSignalMax = 3.0f, kStrongSignal = 0.05f;
// Scale of the attention and MLP output projections relative to a unit-gain layer.
constexpr float kLayerScale = 0.2f;
// Standard deviation of Qwen2's q/k/v biases: half that of the projections' outputs, enough to
// move every logit.
constexpr float kBiasScale = 0.5f;

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform with mean 0 and variance 1: cheap enough for 1.2 billion draws.
float UnitUniform(uint64_t* state) {
  const float u = static_cast<float>(SplitMix(state) >> 40) * (1.0f / 16777216.0f);
  return (2.0f * u - 1.0f) * 1.7320508f;
}

uint64_t HashName(const std::string& name) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a.
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

bool IsStrong(const ModelConfig& config, int64_t token, uint64_t seed) {
  if (token >= static_cast<int64_t>(config.vocab_size) * 3 / 4) return false;
  return (static_cast<uint64_t>(token) * 2654435761ull + seed) % kStrongStride == 0;
}

// A row of the output projection: strong tokens point into S, weak ones away from it.
void LmHeadRow(const ModelConfig& config, int64_t token, uint64_t seed, uint64_t* state,
               float* row) {
  const int dims = config.hidden_size;
  const int signal = std::min(kSignalDims, dims);
  const bool strong = IsStrong(config, token, seed);
  double norm2 = 0;
  for (int i = 0; i < dims; ++i) {
    const bool in_signal = i < signal;
    row[i] = in_signal == strong ? UnitUniform(state) : 0.0f;
    norm2 += static_cast<double>(row[i]) * row[i];
  }
  const float target =
      strong ? kStrongNorm * (0.7f + 0.6f * (UnitUniform(state) + 1.7320508f) / 3.4641016f)
             : kWeakNorm;
  const float scale = norm2 > 0 ? target / static_cast<float>(std::sqrt(norm2)) : 0.0f;
  for (int i = 0; i < dims; ++i) row[i] *= scale;
}

// An input embedding: unit-variance entries with the S part scaled per token.
void EmbeddingRow(const ModelConfig& config, int64_t token, uint64_t seed, uint64_t* state,
                  float* row) {
  float signal_scale = kStrongSignal;
  if (!IsStrong(config, token, seed)) {
    const float u = (UnitUniform(state) + 1.7320508f) / 3.4641016f;  // [0, 1)
    signal_scale = kSignalMin * std::pow(kSignalMax / kSignalMin, u);
  }
  for (int i = 0; i < config.hidden_size; ++i) {
    row[i] = UnitUniform(state) * (i < kSignalDims ? signal_scale : 1.0f);
  }
}

}  // namespace

void SyntheticRows(const ModelConfig& config, const TensorSpec& spec, uint64_t seed, float gain,
                   int64_t row_begin, int64_t rows, std::vector<float>* out) {
  const int64_t cols = spec.shape.back();
  out->resize(static_cast<size_t>(rows * cols));
  const uint64_t tensor_key = HashName(spec.name) ^ (seed * 0x9e3779b97f4a7c15ull);
  const bool lm_head = spec.name == "lm_head.weight" ||
                       (spec.name == "model.embed_tokens.weight" && config.tie_word_embeddings);
  const bool embedding = spec.name == "model.embed_tokens.weight" && !lm_head;
  const bool output_projection =
      absl::EndsWith(spec.name, "o_proj.weight") || absl::EndsWith(spec.name, "down_proj.weight");
  const float matrix_scale =
      (output_projection ? kLayerScale : 1.0f) / std::sqrt(static_cast<float>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = row_begin + r;
    float* values = out->data() + r * cols;
    uint64_t state = tensor_key + static_cast<uint64_t>(row) * 0xd1b54a32d192ed03ull;
    if (absl::EndsWith(spec.name, ".bias")) {
      for (int64_t i = 0; i < cols; ++i) values[i] = UnitUniform(&state) * kBiasScale;
    } else if (spec.shape.size() == 1) {  // RMSNorm weights.
      const float value = spec.name == "model.norm.weight" ? gain : 1.0f;
      for (int64_t i = 0; i < cols; ++i) values[i] = value;
    } else if (lm_head) {
      LmHeadRow(config, row, seed, &state, values);
    } else if (embedding) {
      EmbeddingRow(config, row, seed, &state, values);
    } else {
      for (int64_t i = 0; i < cols; ++i) values[i] = UnitUniform(&state) * matrix_scale;
    }
  }
}

}  // namespace arbor::model
