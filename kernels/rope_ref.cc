#include <cmath>
#include <numbers>

#include "kernels/rope.h"

namespace arbor::kernels {

std::vector<float> RopeInvFreq(double theta, int head_dim, const RopeScalingParams& s) {
  const int half = head_dim / 2;
  std::vector<float> inv_freq(half);
  const double low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
  const double high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
  for (int i = 0; i < half; ++i) {
    double f = std::pow(theta, -2.0 * i / head_dim);
    switch (s.type) {
      case RopeScalingParams::Type::kNone:
        break;
      case RopeScalingParams::Type::kLinear:
        f /= s.factor;
        break;
      case RopeScalingParams::Type::kLlama3: {
        // Long wavelengths are interpolated by `factor`, short ones kept, and the band between
        // blends the two linearly in 1/wavelength (transformers' _compute_llama3_parameters).
        const double wavelen = 2.0 * std::numbers::pi / f;
        if (wavelen > low_wavelen) {
          f /= s.factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                                (s.high_freq_factor - s.low_freq_factor);
          f = (1.0 - smooth) * f / s.factor + smooth * f;
        }
        break;
      }
    }
    // llama.cpp's per-frequency factors (rope_freqs.weight) divide what the type computed.
    if (!s.freq_factors.empty()) f /= s.freq_factors[i];
    inv_freq[i] = static_cast<float>(f);
  }
  return inv_freq;
}

void RopeCosSinRef(const RopeCosSinParams& p) {
  const int64_t half = p.head_dim / 2;
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    const double pos = p.positions[t];
    for (int64_t i = 0; i < half; ++i) {
      const double angle = pos * double{p.inv_freq[i]};
      p.cos[t * half + i] = static_cast<float>(std::cos(angle));
      p.sin[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void RopeRef(const RopeParams& p) {
  const int64_t half = p.head_dim / 2;
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    const float* cos = p.cos + t * half;
    const float* sin = p.sin + t * half;
    for (int64_t h = 0; h < p.num_heads; ++h) {
      float* x = p.x + t * p.token_stride + h * p.head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = x[i], b = x[i + half];
        x[i] = a * cos[i] - b * sin[i];
        x[i + half] = b * cos[i] + a * sin[i];
      }
    }
  }
}

}  // namespace arbor::kernels
