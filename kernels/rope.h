// Rotary position embedding (RoPE) as Llama applies it in Hugging Face's layout ("rotate half":
// dimension i pairs with i + head_dim/2), with Llama-3's frequency-dependent scaling.
//
// The inverse frequencies depend only on the model, so they are computed once at load
// (RopeInvFreq). The cos/sin of each token's angles are computed once per forward step
// (RopeCosSinRef) and shared by every layer and head; RopeRef then rotates q or k in place.
// Framework-free: shared by the CPU references (rope_ref.cc) and CUDA kernels.
#ifndef ARBOR_KERNELS_ROPE_H_
#define ARBOR_KERNELS_ROPE_H_

#include <cstdint>
#include <vector>

namespace arbor::kernels {

// `rope_scaling` of a Hugging Face config; kLlama3 is Llama 3.1/3.2's smooth interpolation.
struct RopeScalingParams {
  enum class Type { kNone, kLinear, kLlama3 };
  Type type = Type::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position_embeddings = 8192.0;
  std::vector<double> freq_factors =
      {};  // Empty, or head_dim / 2 divisors applied after the above.
};

// inv_freq[i] = theta^(-2i/head_dim), i < head_dim/2, then scaled. head_dim must be even.
std::vector<float> RopeInvFreq(double theta, int head_dim, const RopeScalingParams& scaling);

struct RopeCosSinParams {
  const int32_t* positions = nullptr;  // [num_tokens]
  const float* inv_freq = nullptr;     // [head_dim / 2]
  float* cos = nullptr;                // [num_tokens, head_dim / 2]
  float* sin = nullptr;                // [num_tokens, head_dim / 2]
  int64_t num_tokens = 0;
  int64_t head_dim = 0;
};

// cos/sin of positions[t] · inv_freq[i]; the angle is formed in double so long positions keep
// their precision.
void RopeCosSinRef(const RopeCosSinParams& params);

struct RopeParams {
  float* x = nullptr;  // [num_tokens, num_heads, head_dim]; token t at x + t * token_stride.
  const float* cos = nullptr;  // [num_tokens, head_dim / 2] from RopeCosSinRef.
  const float* sin = nullptr;
  int64_t num_tokens = 0;
  int64_t num_heads = 0;
  int64_t head_dim = 0;
  int64_t token_stride = 0;  // Elements between tokens, >= num_heads * head_dim.
};

// Rotates every head of every token in place:
//   x'[i] = x[i]·cos − x[i+h]·sin,  x'[i+h] = x[i+h]·cos + x[i]·sin,  h = head_dim/2.
void RopeRef(const RopeParams& params);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_ROPE_H_
