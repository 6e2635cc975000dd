// The AMX kernel of the per-32 repacked rows (WeightType::kQ4x16, kQ5x16, kQ8x16: repacked_rows.h)
// for many activation rows, giving the AVX-512 kernel's bits (quant_dot_avx512vnni.cc's
// RepackedDotRange), so that prefill and sibling branches run on tiles in the batch-invariant
// numerics: a row's result is the same whichever kernel its batch's size picked.
//
// Why the bits match: the AVX-512 kernel sums each block's 32 integer products of a weight row
// and an activation row exactly, then does per block, in this order, one FMA of the offset
// (m·d_x·Σq) and one FMA of the converted sum scaled by d·d_x, block after block. Here one tile
// product gives those exact integer sums for 16 activation rows × 16 weight rows at once (the
// activations as the signed A operand, straight from the quantized rows; the weights as the
// unsigned B operand, whose rows are repacked_zmm_rows.h's vectors), and the same float ops
// follow in the same order, one register per activation row with the 16 weight rows in lanes, as
// the AVX-512 kernel holds them. Q8_0's weights (q + 128) take back 128·Σq in integers, as there.
//
// Compiled with AMX and AVX-512 (kernels/CMakeLists.txt); runs only where CpuRunsQ8Isa(kAmx).
#define ARBOR_QUANT_ISA_NS amx
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/quant/amx_tiles.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_rows.h"
#include "kernels/quant/repacked_zmm_rows.h"

namespace arbor::kernels::amx {
namespace {

constexpr int kBlockBytes = 32;  // Activation bytes of one block, a tile product's k.
constexpr int kTileBytes = 512;  // A B tile: 8 rows × 64 bytes.

template <typename Block>
constexpr bool kOffsets = !std::is_same_v<Block, Q8x16Block>;

// The activations' per-block factors laid out per tile, [tile][block][16 rows] (rows past m
// zero): a row's factor is then a broadcast from a fixed offset, where Q8Rows' layout costs a
// pointer per row and array.
struct TileFactors {
  std::vector<float> d;         // d_x.
  std::vector<float> sums;      // d_x·Σq (the offsets' factor).
  std::vector<int32_t> q_sums;  // −128·Σq (Q8_0's integer offset).

  void From(const Q8Rows& x, int64_t m) {
    const int64_t blocks = x.chunks, tiles = (m + kTileRows - 1) / kTileRows;
    d.assign(tiles * blocks * kTileRows, 0.0f);
    sums.assign(d.size(), 0.0f);
    q_sums.assign(d.size(), 0);
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t at = ((row / kTileRows) * blocks + b) * kTileRows + row % kTileRows;
        d[at] = x.scales[8 * (row * x.stride + b)];
        sums[at] = x.sums[SumIndex(row, b, 2, x.stride)];
        q_sums[at] = -128 * x.q_sums[row * x.stride + b];
      }
    }
  }
};

// The float half of a block for a tile's 16 rows: acc[j] (activation row j, weight rows in
// lanes) gains the block's offset term, then its scaled integer sums `c[j]`, as the AVX-512
// kernel adds them. `at` indexes the block's factors in TileFactors.
template <typename Block>
[[gnu::always_inline]] inline void AddBlock(const Block& block, const int32_t (&c)[16][16],
                                            const TileFactors& x, int64_t at,
                                            __m512 (&acc)[kTileRows]) {
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.d)));
  __m512 m = _mm512_setzero_ps();
  if constexpr (kOffsets<Block>) {
    m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.m)));
  }
  const float* dx = x.d.data() + at;
  const float* sums = x.sums.data() + at;
  const int32_t* q_sums = x.q_sums.data() + at;
#pragma GCC unroll 16
  for (int j = 0; j < kTileRows; ++j) {
    __m512i sum = _mm512_load_si512(c[j]);
    if constexpr (kOffsets<Block>) {
      acc[j] = _mm512_fmadd_ps(m, _mm512_set1_ps(sums[j]), acc[j]);
    } else {
      sum = _mm512_add_epi32(sum, _mm512_set1_epi32(q_sums[j]));
    }
    acc[j] =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, _mm512_set1_ps(dx[j])), acc[j]);
  }
}

// One tile product: activation bytes `a` (rows `stride` apart) times the weights' B tile `w`,
// into C tile `c`, stored to `out`. Macros: the intrinsics take tile numbers as constants.
#define ARBOR_AMX_PRODUCT(c, a_tile, b_tile, a, stride, w, out) \
  do {                                                          \
    _tile_zero(c);                                              \
    _tile_loadd(a_tile, a, stride);                             \
    _tile_loadd(b_tile, w, 64);                                 \
    _tile_dpbsud(c, a_tile, b_tile);                            \
    _tile_stored(c, out, 64);                                   \
  } while (false)

// The 16 weight rows of `group` against the activation tile from row `row0`: two blocks' tile
// products in flight while the previous block's sums are scaled. `b_tiles(b)` is block b's
// B tile.
template <typename Block, typename BTiles>
void TilePass(const Block* group, int64_t blocks, const BTiles& b_tiles, const TileFactors& x,
              const ActivationTiles& tiles, int64_t row0, int rows, float* out,
              int64_t out_stride) {
  const int64_t stride = tiles.stride();
  const int64_t first = row0 / kTileRows * blocks * kTileRows;  // The tile's factors.
  alignas(64) int32_t c0[16][16];
  alignas(64) int32_t c1[16][16];
  __m512 acc[kTileRows];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    ARBOR_AMX_PRODUCT(0, 2, 4, tiles.Tile(row0, b), stride, b_tiles(b), c0);
    ARBOR_AMX_PRODUCT(1, 3, 5, tiles.Tile(row0, b + 1), stride, b_tiles(b + 1), c1);
    AddBlock(group[b], c0, x, first + b * kTileRows, acc);
    AddBlock(group[b + 1], c1, x, first + (b + 1) * kTileRows, acc);
  }
  if (b < blocks) {
    ARBOR_AMX_PRODUCT(0, 2, 4, tiles.Tile(row0, b), stride, b_tiles(b), c0);
    AddBlock(group[b], c0, x, first + b * kTileRows, acc);
  }
  for (int j = 0; j < rows; ++j) _mm512_storeu_ps(out + (row0 + j) * out_stride, acc[j]);
}

#undef ARBOR_AMX_PRODUCT

template <typename Block>
void RowsRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  const Block* w = static_cast<const Block*>(p.w);
  const int64_t blocks = p.x.chunks;
  thread_local std::vector<int8_t> storage;
  const ActivationTiles tiles(
      p.m, blocks, kBlockBytes, [&](int64_t i) { return p.x.q + kBlockBytes * i * p.x.stride; },
      storage);
  thread_local TileFactors factors;
  factors.From(p.x, p.m);
  // Nibbles are unpacked once per group into B tiles that every activation tile then reads;
  // Q8_0's repacked bytes already are B tiles.
  thread_local std::vector<uint8_t> unpacked;
  if constexpr (kOffsets<Block>) unpacked.resize(blocks * kTileBytes);
  const TileConfig config = TileConfig::Products(kBlockBytes);
  _tile_loadconfig(&config);
  for (int64_t n = n_begin; n < n_end; n += 16) {
    const Block* group = w + (n / 16) * blocks;
    if constexpr (kOffsets<Block>) {
      for (int64_t b = 0; b < blocks; ++b) {
        __m512i q[8];
        LoadRows(group[b], q);
        for (int u = 0; u < 8; ++u)
          _mm512_storeu_si512(unpacked.data() + b * kTileBytes + 64 * u, q[u]);
      }
    }
    const auto b_tiles = [&](int64_t b) -> const void* {
      if constexpr (kOffsets<Block>) {
        return unpacked.data() + b * kTileBytes;
      } else {
        return group[b].qs;
      }
    };
    for (int64_t row0 = 0; row0 < p.m; row0 += kTileRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - row0));
      TilePass(group, blocks, b_tiles, factors, tiles, row0, rows, p.out + n, p.out_stride);
    }
  }
  _tile_release();
}

}  // namespace

void RepackedDotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ8x16) return RowsRange<Q8x16Block>(p, n_begin, n_end);
  if (p.w_type == WeightType::kQ5x16) return RowsRange<Q5x16Block>(p, n_begin, n_end);
  RowsRange<Q4x16Block>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::amx
