// bfloat16 and IEEE half <-> float conversion on the CPU. bf16 is the top half of a float32,
// so widening is exact; narrowing (to bf16 or half) rounds to nearest even (NaN stays NaN).
#ifndef ARBOR_BASE_BF16_H_
#define ARBOR_BASE_BF16_H_

#include <cstdint>
#include <cstring>

#ifdef __F16C__
#include <immintrin.h>
#endif

namespace arbor::base {

inline float Bf16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

inline uint16_t FloatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // Quiet NaN.
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// IEEE 754 binary16 → float32 (exact, subnormals included). One instruction where the CPU has
// F16C (every AVX2 CPU): the quantized matmul converts two scales per 32 weights.
inline float HalfToFloat(uint16_t h) {
#ifdef __F16C__
  return _cvtsh_ss(h);
#endif
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // Subnormal: normalise.
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// float32 → IEEE 754 binary16, rounding to nearest even (overflow → ±inf, NaN stays NaN,
// subnormal halves included).
inline uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf.
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // Rounds past 65504.
  if (abs < 0x38800000u) {               // Below the smallest normal half: a subnormal (or zero).
    if (abs < 0x33000000u) return sign;  // Below half the smallest subnormal.
    const uint32_t mantissa = (abs & 0x007fffffu) | 0x00800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24 bits dropped.
    const uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), midpoint = 1u << (shift - 1);
    return sign |
           static_cast<uint16_t>(half + (rest > midpoint || (rest == midpoint && (half & 1))));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even (a carry
  // into the exponent is the correct result).
  const uint32_t rebased = abs - 0x38000000u;
  return sign | static_cast<uint16_t>((rebased + 0x0fffu + ((rebased >> 13) & 1u)) >> 13);
}

}  // namespace arbor::base

#endif  // ARBOR_BASE_BF16_H_
