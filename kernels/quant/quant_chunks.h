// Every block-quantized type seen as 32-weight chunks, w_j = s[j / 16]·q_j + o[j / 16]: one
// integer per weight and a scale and offset per 16-weight half (equal halves except in Q6_K,
// whose scales cover 16 weights). The dequantizer, the quantized matmul and the CUDA GEMM
// (kernels/invariant_gemm.cu, which reads a lane's 8 weights of a chunk) read blocks only through
// these traits, so a layout is written once (the AVX2 loaders of quant_chunk_bytes.h excepted,
// which the matmul tests check against this through the dequantizer).
#ifndef ARBOR_KERNELS_QUANT_QUANT_CHUNKS_H_
#define ARBOR_KERNELS_QUANT_QUANT_CHUNKS_H_

#include <cstdint>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

#include "base/bf16.h"
#include "base/host_device.h"
#include "kernels/quant/quant_blocks.h"

namespace arbor::kernels {

struct Chunk {
  float q[kQuantBlock];
  float s[2];
  float o[2];
};

// An f16 field of a block as fp32, on the host and in CUDA kernels.
ARBOR_HOST_DEVICE inline float HalfValue(uint16_t h) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(h));
#else
  return base::HalfToFloat(h);
#endif
}

// Each type's traits: kChunks per block; Q(b, c, j), the integer of weight j of chunk c; and
// Affine(b, c, s, o), the chunk's scales and offsets per half.
template <typename Block>
struct ChunkTraits;

ARBOR_HOST_DEVICE inline int Nibble(const uint8_t* qs, int j, bool high) {
  return high ? qs[j] >> 4 : qs[j] & 0x0f;
}

// Weight j of a 32-weight Q4 run: byte j's low nibble for j < 16, byte j − 16's high one after.
ARBOR_HOST_DEVICE inline int NibbleOfPair(const uint8_t* qs, int j) {
  return Nibble(qs, j % (kQuantBlock / 2), j >= kQuantBlock / 2);
}

ARBOR_HOST_DEVICE inline void SameHalves(float scale, float offset, float (&s)[2], float (&o)[2]) {
  s[0] = s[1] = scale;
  o[0] = o[1] = offset;
}

template <>
struct ChunkTraits<BlockQ8_0> {
  static constexpr int kChunks = 1;
  ARBOR_HOST_DEVICE static int Q(const BlockQ8_0& b, int, int j) { return b.qs[j]; }
  ARBOR_HOST_DEVICE static void Affine(const BlockQ8_0& b, int, float (&s)[2], float (&o)[2]) {
    SameHalves(HalfValue(b.d), 0.0f, s, o);
  }
};

template <>
struct ChunkTraits<BlockQ4_0> {
  static constexpr int kChunks = 1;
  ARBOR_HOST_DEVICE static int Q(const BlockQ4_0& b, int, int j) { return NibbleOfPair(b.qs, j); }
  ARBOR_HOST_DEVICE static void Affine(const BlockQ4_0& b, int, float (&s)[2], float (&o)[2]) {
    const float d = HalfValue(b.d);
    SameHalves(d, -8.0f * d, s, o);
  }
};

template <>
struct ChunkTraits<BlockQ4_1> {
  static constexpr int kChunks = 1;
  ARBOR_HOST_DEVICE static int Q(const BlockQ4_1& b, int, int j) { return NibbleOfPair(b.qs, j); }
  ARBOR_HOST_DEVICE static void Affine(const BlockQ4_1& b, int, float (&s)[2], float (&o)[2]) {
    SameHalves(HalfValue(b.d), HalfValue(b.m), s, o);
  }
};

// Q5_0 / Q5_1: the nibbles plus a fifth bit from qh (bit j of the little-endian word for weight
// j).
template <typename Block>
ARBOR_HOST_DEVICE int Q5(const Block& b, int j) {
  const uint32_t qh = b.qh[0] | b.qh[1] << 8 | b.qh[2] << 16 | uint32_t{b.qh[3]} << 24;
  return NibbleOfPair(b.qs, j) | static_cast<int>((qh >> j) & 1) << 4;
}

template <>
struct ChunkTraits<BlockQ5_0> {
  static constexpr int kChunks = 1;
  ARBOR_HOST_DEVICE static int Q(const BlockQ5_0& b, int, int j) { return Q5(b, j); }
  ARBOR_HOST_DEVICE static void Affine(const BlockQ5_0& b, int, float (&s)[2], float (&o)[2]) {
    const float d = HalfValue(b.d);
    SameHalves(d, -16.0f * d, s, o);
  }
};

template <>
struct ChunkTraits<BlockQ5_1> {
  static constexpr int kChunks = 1;
  ARBOR_HOST_DEVICE static int Q(const BlockQ5_1& b, int, int j) { return Q5(b, j); }
  ARBOR_HOST_DEVICE static void Affine(const BlockQ5_1& b, int, float (&s)[2], float (&o)[2]) {
    SameHalves(HalfValue(b.d), HalfValue(b.m), s, o);
  }
};

// Sub-block j's 6-bit scale and minimum in a Q4_K / Q5_K `scales` array (ggml's
// get_scale_min_k4).
ARBOR_HOST_DEVICE inline void ScaleMinK4(int j, const uint8_t* q, int* scale, int* min) {
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
ARBOR_HOST_DEVICE void AffineK(const Block& b, int c, float (&s)[2], float (&o)[2]) {
  int scale = 0, min = 0;
  ScaleMinK4(c, b.scales, &scale, &min);
  SameHalves(HalfValue(b.d) * static_cast<float>(scale),
             -(HalfValue(b.dmin) * static_cast<float>(min)), s, o);
}

// Sub-blocks 2p and 2p + 1 share qs[32p ..]: low, then high nibbles.
template <>
struct ChunkTraits<BlockQ4_K> {
  static constexpr int kChunks = kSuperBlock / kQuantBlock;
  ARBOR_HOST_DEVICE static int Q(const BlockQ4_K& b, int c, int j) {
    return Nibble(b.qs + kQuantBlock * (c / 2), j, c & 1);
  }
  ARBOR_HOST_DEVICE static void Affine(const BlockQ4_K& b, int c, float (&s)[2], float (&o)[2]) {
    AffineK(b, c, s, o);
  }
};

template <>
struct ChunkTraits<BlockQ5_K> {
  static constexpr int kChunks = kSuperBlock / kQuantBlock;
  ARBOR_HOST_DEVICE static int Q(const BlockQ5_K& b, int c, int j) {
    return Nibble(b.qs + kQuantBlock * (c / 2), j, c & 1) | ((b.qh[j] >> c) & 1) << 4;
  }
  ARBOR_HOST_DEVICE static void Affine(const BlockQ5_K& b, int c, float (&s)[2], float (&o)[2]) {
    AffineK(b, c, s, o);
  }
};

// Chunk c is group r = c % 4 of half n = c / 4: low nibbles of ql[64n + 32(r & 1) + l] (high
// nibbles for r ≥ 2) and bits 2r, 2r+1 of qh[32n + l], minus 32; a scale per 16 weights.
template <>
struct ChunkTraits<BlockQ6_K> {
  static constexpr int kChunks = kSuperBlock / kQuantBlock;
  ARBOR_HOST_DEVICE static int Q(const BlockQ6_K& b, int c, int j) {
    const int n = c / 4, r = c % 4;
    const int low = Nibble(b.ql + 64 * n + 32 * (r & 1), j, r >= 2);
    const int high = (b.qh[32 * n + j] >> (2 * r)) & 3;
    return (low | high << 4) - 32;
  }
  ARBOR_HOST_DEVICE static void Affine(const BlockQ6_K& b, int c, float (&s)[2], float (&o)[2]) {
    const float d = HalfValue(b.d);
    const int n = c / 4, r = c % 4;
    for (int h = 0; h < 2; ++h) {
      s[h] = d * static_cast<float>(b.scales[8 * n + 2 * r + h]);
      o[h] = 0.0f;
    }
  }
};

// Chunk c of block b in full: its 32 integers, scales and offsets. Half by half, so that within
// each the layouts' tests on j / 16 are constant and the loop vectorises (20–30× faster for the
// per-32 types than one loop over j).
template <typename Block>
void LoadChunk(const Block& b, int c, Chunk& out) {
  constexpr int kHalf = kQuantBlock / 2;
  for (int i = 0; i < kHalf; ++i) out.q[i] = static_cast<float>(ChunkTraits<Block>::Q(b, c, i));
  for (int i = 0; i < kHalf; ++i) {
    out.q[kHalf + i] = static_cast<float>(ChunkTraits<Block>::Q(b, c, kHalf + i));
  }
  ChunkTraits<Block>::Affine(b, c, out.s, out.o);
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_QUANT_CHUNKS_H_
