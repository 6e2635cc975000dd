// Every block-quantized type seen as 32-weight chunks, w_j = s[j / 16]·q_j + o[j / 16]: one
// integer per weight and a scale and offset per 16-weight half (equal halves except in Q6_K,
// whose scales cover 16 weights). The dequantizer and the quantized matmul read blocks only
// through these traits, so a layout is written once (the AVX2 loaders of quant_chunk_bytes.h
// excepted, which the matmul tests check against this through the dequantizer).
#ifndef ARBOR_KERNELS_QUANT_QUANT_CHUNKS_H_
#define ARBOR_KERNELS_QUANT_QUANT_CHUNKS_H_

#include <cstdint>
#include <cstring>

#include "base/bf16.h"
#include "kernels/quant/quant_blocks.h"

namespace arbor::kernels {

struct Chunk {
  float q[kQuantBlock];
  float s[2];
  float o[2];
};

template <typename Block>
struct ChunkTraits;

inline float Nibble(const uint8_t* qs, int j, bool high) {
  return high ? qs[j] >> 4 : qs[j] & 0x0f;
}

template <>
struct ChunkTraits<BlockQ8_0> {
  static constexpr int kChunks = 1;
  static void Load(const BlockQ8_0& b, int, Chunk& c) {
    const float d = base::HalfToFloat(b.d);
    for (int j = 0; j < kQuantBlock; ++j) c.q[j] = b.qs[j];
    c.s[0] = c.s[1] = d;
    c.o[0] = c.o[1] = 0.0f;
  }
};

template <typename Block>
void LoadQ4(const Block& b, float d, float m, Chunk& c) {
  for (int j = 0; j < kQuantBlock / 2; ++j) {
    c.q[j] = Nibble(b.qs, j, false);
    c.q[j + kQuantBlock / 2] = Nibble(b.qs, j, true);
  }
  c.s[0] = c.s[1] = d;
  c.o[0] = c.o[1] = m;
}

template <>
struct ChunkTraits<BlockQ4_0> {
  static constexpr int kChunks = 1;
  static void Load(const BlockQ4_0& b, int, Chunk& c) {
    const float d = base::HalfToFloat(b.d);
    LoadQ4(b, d, -8.0f * d, c);
  }
};

template <>
struct ChunkTraits<BlockQ4_1> {
  static constexpr int kChunks = 1;
  static void Load(const BlockQ4_1& b, int, Chunk& c) {
    LoadQ4(b, base::HalfToFloat(b.d), base::HalfToFloat(b.m), c);
  }
};

// Q5_0 / Q5_1: the nibbles plus a fifth bit from qh (bit j for weight j).
template <typename Block>
void LoadQ5(const Block& b, float d, float m, Chunk& c) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < kQuantBlock / 2; ++j) {
    c.q[j] = Nibble(b.qs, j, false) + static_cast<float>(((qh >> j) & 1) << 4);
    c.q[j + kQuantBlock / 2] =
        Nibble(b.qs, j, true) + static_cast<float>(((qh >> (j + kQuantBlock / 2)) & 1) << 4);
  }
  c.s[0] = c.s[1] = d;
  c.o[0] = c.o[1] = m;
}

template <>
struct ChunkTraits<BlockQ5_0> {
  static constexpr int kChunks = 1;
  static void Load(const BlockQ5_0& b, int, Chunk& c) {
    const float d = base::HalfToFloat(b.d);
    LoadQ5(b, d, -16.0f * d, c);
  }
};

template <>
struct ChunkTraits<BlockQ5_1> {
  static constexpr int kChunks = 1;
  static void Load(const BlockQ5_1& b, int, Chunk& c) {
    LoadQ5(b, base::HalfToFloat(b.d), base::HalfToFloat(b.m), c);
  }
};

// Sub-block j's 6-bit scale and minimum in a Q4_K / Q5_K `scales` array (ggml's
// get_scale_min_k4).
inline void ScaleMinK4(int j, const uint8_t* q, int* scale, int* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    *min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K / Q5_K chunk `c`: the scale d·sc and offset −dmin·m of sub-block c.
template <typename Block>
void AffineK(const Block& b, int c, Chunk& out) {
  int scale = 0, min = 0;
  ScaleMinK4(c, b.scales, &scale, &min);
  out.s[0] = out.s[1] = base::HalfToFloat(b.d) * static_cast<float>(scale);
  out.o[0] = out.o[1] = -(base::HalfToFloat(b.dmin) * static_cast<float>(min));
}

template <>
struct ChunkTraits<BlockQ4_K> {
  static constexpr int kChunks = kSuperBlock / kQuantBlock;
  static void Load(const BlockQ4_K& b, int c, Chunk& out) {
    const uint8_t* qs = b.qs + kQuantBlock * (c / 2);
    for (int j = 0; j < kQuantBlock; ++j) out.q[j] = Nibble(qs, j, c & 1);
    AffineK(b, c, out);
  }
};

template <>
struct ChunkTraits<BlockQ5_K> {
  static constexpr int kChunks = kSuperBlock / kQuantBlock;
  static void Load(const BlockQ5_K& b, int c, Chunk& out) {
    const uint8_t* qs = b.qs + kQuantBlock * (c / 2);
    for (int j = 0; j < kQuantBlock; ++j) {
      out.q[j] = Nibble(qs, j, c & 1) + static_cast<float>(((b.qh[j] >> c) & 1) << 4);
    }
    AffineK(b, c, out);
  }
};

template <>
struct ChunkTraits<BlockQ6_K> {
  static constexpr int kChunks = kSuperBlock / kQuantBlock;
  // Chunk c is group r = c % 4 of half n = c / 4: low nibbles of ql[64n + 32(r & 1) + l] (high
  // nibbles for r ≥ 2) and bits 2r, 2r+1 of qh[32n + l], minus 32.
  static void Load(const BlockQ6_K& b, int c, Chunk& out) {
    const int n = c / 4, r = c % 4;
    const uint8_t* ql = b.ql + 64 * n + 32 * (r & 1);
    const uint8_t* qh = b.qh + 32 * n;
    for (int j = 0; j < kQuantBlock; ++j) {
      const int low = Nibble(ql, j, r >= 2), high = (qh[j] >> (2 * r)) & 3;
      out.q[j] = static_cast<float>((low | high << 4) - 32);
    }
    const float d = base::HalfToFloat(b.d);
    for (int h = 0; h < 2; ++h) {
      out.s[h] = d * static_cast<float>(b.scales[8 * n + 2 * r + h]);
      out.o[h] = 0.0f;
    }
  }
};

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_QUANT_CHUNKS_H_
