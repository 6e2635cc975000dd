// The Llama-3 RoPE frequency scaling written from its published formula in float64, for tests
// that check the kernels' and backends' float32 RoPE against an independent reference.
#ifndef ARBOR_TESTS_SUPPORT_ROPE_REFERENCE_H_
#define ARBOR_TESTS_SUPPORT_ROPE_REFERENCE_H_

#include <numbers>

namespace arbor::kernels::reference {

// The scaled inverse frequency of an unscaled one, `base` = theta^(−2i/head_dim): wavelengths
// shorter than original_max / high_freq_factor keep it, longer than original_max /
// low_freq_factor divide it by `factor`, and those between blend the two smoothly.
inline double Llama3ScaledInvFreq64(double base, double factor, double low_freq_factor,
                                    double high_freq_factor, double original_max) {
  const double wavelen = 2 * std::numbers::pi / base;
  if (wavelen < original_max / high_freq_factor) return base;
  if (wavelen > original_max / low_freq_factor) return base / factor;
  const double smooth =
      (original_max / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
  return (1 - smooth) * base / factor + smooth * base;
}

}  // namespace arbor::kernels::reference

#endif  // ARBOR_TESTS_SUPPORT_ROPE_REFERENCE_H_
