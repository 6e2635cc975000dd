// The quantized matmul's 8-bit-activation kernel on AMX tiles (Sapphire Rapids and later): one
// tile instruction multiplies 16 weight rows by 16 activation rows over a 32-weight chunk (8,192
// multiply-adds), where a vpdpbusd does 64. Built for the many-row matmuls of prefill and of
// sibling branches; Q8IsaForRows picks it from kAmxMinRows rows up.
//
// Per 16 output features the weights are decoded once (quant_chunk_bytes.h's LoadChunk: the same
// bytes, scales and offsets the vector kernels use) into a scratch of 32-byte chunk rows, which an
// A tile reads directly; the activations are packed once per call into the B tiles' layout (per
// 16 rows and chunk, 8 rows of [16 activation rows × 4 bytes]). Each chunk's integer tile is
// converted to float and scaled by s_w·d_x, and the offset o_w·d_x·Σq_x added, in AVX-512 —
// the integer sums are exact, so results differ from the vector kernels only in float summation
// order. Q6_K's per-16 scales take two half-chunk tile products.
//
// Compiled with AMX and AVX-512 (kernels/CMakeLists.txt); runs only where CpuRunsQ8Isa(kAmx) found
// the instructions and the kernel granted this process the tile state.
#define ARBOR_QUANT_ISA_NS amx
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "kernels/quant/amx_tiles.h"
#include "kernels/quant/quant_chunk_bytes.h"
#include "kernels/quant/quant_dot.h"

namespace arbor::kernels::amx {
namespace {

constexpr int kTile = 16;          // Weight rows, and activation rows, per tile.
constexpr int kChunkBytes = 32;    // One chunk of a weight row.
constexpr int kPackedBytes = 512;  // One chunk of 16 activation rows in the B layout.

// Tile registers. Macros, not constants: the intrinsics paste the number into the instruction.
// Two sets, so the tile products of one chunk run while the previous chunk's sums are scaled.
#define ARBOR_TMM_C0 0  // 16 weight rows × 16 int32 sums (a chunk, or its first half for Q6_K).
#define ARBOR_TMM_C1 1  // The other chunk's (or the second half's).
#define ARBOR_TMM_A0 2  // 16 weight rows × a chunk (or half a chunk).
#define ARBOR_TMM_A1 3
#define ARBOR_TMM_B0 4  // 8 (or 4) groups of 4 bytes × 16 activation rows.
#define ARBOR_TMM_B1 5
// One call's activations in the B tiles' layout, with each chunk's scales and offset sums laid
// out across the tile's 16 rows (one zmm each).
struct Packed {
  std::vector<int8_t> q;    // [tiles, chunks, 512]
  std::vector<float> d;     // [tiles, chunks, 16]
  std::vector<float> sums;  // [tiles, chunks, 3 parts, 16]

  void From(const Q8Rows& x, int64_t m) {
    const int64_t tiles = (m + kTile - 1) / kTile;
    q.assign(tiles * x.chunks * kPackedBytes, 0);
    d.assign(tiles * x.chunks * kTile, 0.0f);
    sums.assign(tiles * x.chunks * 3 * kTile, 0.0f);
    for (int64_t row = 0; row < m; ++row) {
      const int64_t t = row / kTile, j = row % kTile;
      const int8_t* src = x.q + 32 * row * x.stride;
      for (int64_t g = 0; g < x.chunks; ++g) {
        const int64_t at = t * x.chunks + g;
        int8_t* tile = q.data() + at * kPackedBytes;
        for (int kk = 0; kk < 8; ++kk)
          std::memcpy(tile + kk * 64 + 4 * j, src + 32 * g + 4 * kk, 4);
        d[at * kTile + j] = x.scales[8 * (row * x.stride + g)];
        for (int part = 0; part < 3; ++part) {
          sums[(at * 3 + part) * kTile + j] = x.sums[SumIndex(row, g, part, x.stride)];
        }
      }
    }
  }
};

// 16 weight rows decoded: per chunk, 16 rows of 32 bytes (an A tile), and per chunk and half the
// 16 rows' scales and offsets.
struct Decoded {
  std::vector<uint8_t> q;  // [chunks, 16, 32]
  std::vector<float> s;    // [chunks, 2, 16]
  std::vector<float> o;    // [chunks, 2, 16]

  template <typename Block>
  void From(const Block* w, int64_t blocks, int64_t n0, int rows, int64_t chunks) {
    q.resize(chunks * kTile * kChunkBytes);
    s.resize(chunks * 2 * kTile);
    o.resize(chunks * 2 * kTile);
    for (int i = 0; i < kTile; ++i) {
      const Block* row = w + (n0 + i) * blocks;
      for (int64_t b = 0; b < blocks; ++b) {
        // Unrolled, the chunk's place in its block (nibble half, scale field) folds away.
#pragma GCC unroll 8
        for (int c = 0; c < kChunksPerBlock<Block>; ++c) {
          ByteChunk chunk{_mm256_setzero_si256(), {0.0f, 0.0f}, {0.0f, 0.0f}};
          if (i < rows) LoadChunk(row[b], c, chunk);
          Put(b * kChunksPerBlock<Block> + c, i, chunk);
        }
      }
    }
  }

 private:
  void Put(int64_t g, int i, const ByteChunk& c) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q.data() + (g * kTile + i) * kChunkBytes), c.q);
    for (int h = 0; h < 2; ++h) {
      s[(g * 2 + h) * kTile + i] = c.s[h];
      o[(g * 2 + h) * kTile + i] = c.o[h];
    }
  }
};

// acc[i] += Σ over the C tile's row i (weight row i, the 16 activation rows in lanes) scaled by
// the weight row's scale and each activation row's: the float half of a chunk's product.
[[gnu::always_inline]] inline void Accumulate(const int32_t (&c)[kTile][kTile], const float* ws,
                                              const float* wo, __m512 dx, __m512 sums, bool offsets,
                                              __m512 (&acc)[kTile]) {
  for (int i = 0; i < kTile; ++i) {
    const __m512 dot = _mm512_cvtepi32_ps(_mm512_load_si512(c[i]));
    acc[i] = _mm512_fmadd_ps(dot, _mm512_mul_ps(_mm512_set1_ps(ws[i]), dx), acc[i]);
    if (offsets) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(wo[i]), sums, acc[i]);
  }
}

// One tile product into C tile `c` (a macro argument: the register number) and its sums stored
// to `out`: weights `a` (stride 32) times activations `b`.
#define ARBOR_TILE_PRODUCT(c, a_tile, b_tile, a, b, is_signed, out) \
  do {                                                              \
    _tile_zero(c);                                                  \
    _tile_loadd(a_tile, a, kChunkBytes);                            \
    _tile_loadd(b_tile, b, 64);                                     \
    if (is_signed) {                                                \
      _tile_dpbssd(c, a_tile, b_tile);                              \
    } else {                                                        \
      _tile_dpbusd(c, a_tile, b_tile);                              \
    }                                                               \
  } while (false)

// The 16 × 16 block of outputs of decoded weights `w` and activation tile `t`, in acc (lane j:
// activation row 16t + j; register i: weight row i). Two tile products are in flight per step:
// two chunks, or Q6_K's two halves of one.
template <typename Block>
void TileProduct(const Decoded& w, const Packed& x, int64_t t, int64_t chunks,
                 __m512 (&acc)[kTile]) {
  constexpr bool kOffsets = !kSignedBytes<Block>;
  constexpr bool kSigned = kSignedBytes<Block>;
  constexpr bool kHalves = kSplitScales<Block>;
  alignas(64) int32_t c0[kTile][kTile];
  alignas(64) int32_t c1[kTile][kTile];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  auto a_tile = [&](int64_t g) { return w.q.data() + g * kTile * kChunkBytes; };
  auto b_tile = [&](int64_t g) { return x.q.data() + (t * chunks + g) * kPackedBytes; };
  auto scale = [&](int64_t g) { return _mm512_loadu_ps(x.d.data() + (t * chunks + g) * kTile); };
  auto sums = [&](int64_t g, int part) {
    return _mm512_loadu_ps(x.sums.data() + ((t * chunks + g) * 3 + part) * kTile);
  };
  const float* ws = w.s.data();
  const float* wo = w.o.data();
  if constexpr (kHalves) {
    for (int64_t g = 0; g < chunks; ++g) {
      ARBOR_TILE_PRODUCT(ARBOR_TMM_C0, ARBOR_TMM_A0, ARBOR_TMM_B0, a_tile(g), b_tile(g), kSigned,
                         c0);
      ARBOR_TILE_PRODUCT(ARBOR_TMM_C1, ARBOR_TMM_A1, ARBOR_TMM_B1, a_tile(g) + kChunkBytes / 2,
                         b_tile(g) + 4 * 64, kSigned, c1);
      _tile_stored(ARBOR_TMM_C0, c0, 64);
      _tile_stored(ARBOR_TMM_C1, c1, 64);
      const __m512 dx = scale(g);
      Accumulate(c0, ws + g * 2 * kTile, wo + g * 2 * kTile, dx, sums(g, 0), kOffsets, acc);
      Accumulate(c1, ws + (g * 2 + 1) * kTile, wo + (g * 2 + 1) * kTile, dx, sums(g, 1), kOffsets,
                 acc);
    }
    return;
  }
  int64_t g = 0;
  for (; g + 2 <= chunks; g += 2) {
    ARBOR_TILE_PRODUCT(ARBOR_TMM_C0, ARBOR_TMM_A0, ARBOR_TMM_B0, a_tile(g), b_tile(g), kSigned, c0);
    ARBOR_TILE_PRODUCT(ARBOR_TMM_C1, ARBOR_TMM_A1, ARBOR_TMM_B1, a_tile(g + 1), b_tile(g + 1),
                       kSigned, c1);
    _tile_stored(ARBOR_TMM_C0, c0, 64);
    Accumulate(c0, ws + g * 2 * kTile, wo + g * 2 * kTile, scale(g), sums(g, 2), kOffsets, acc);
    _tile_stored(ARBOR_TMM_C1, c1, 64);
    Accumulate(c1, ws + (g + 1) * 2 * kTile, wo + (g + 1) * 2 * kTile, scale(g + 1), sums(g + 1, 2),
               kOffsets, acc);
  }
  if (g < chunks) {
    ARBOR_TILE_PRODUCT(ARBOR_TMM_C0, ARBOR_TMM_A0, ARBOR_TMM_B0, a_tile(g), b_tile(g), kSigned, c0);
    _tile_stored(ARBOR_TMM_C0, c0, 64);
    Accumulate(c0, ws + g * 2 * kTile, wo + g * 2 * kTile, scale(g), sums(g, 2), kOffsets, acc);
  }
}

#undef ARBOR_TILE_PRODUCT

template <typename Block>
void Range(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  thread_local Packed x;
  thread_local Decoded w;
  x.From(p.x, p.m);
  const int64_t chunks = p.x.chunks;
  const int64_t blocks = chunks / kChunksPerBlock<Block>;
  const Block* weights = static_cast<const Block*>(p.w);
  // Whole chunks (k = 32) or, for Q6_K's per-16 scales, half chunks (k = 16); the tiles are
  // numbered as TileConfig::Products numbers them.
  const TileConfig config =
      TileConfig::Products(kSplitScales<Block> ? kChunkBytes / 2 : kChunkBytes);
  _tile_loadconfig(&config);
  alignas(64) float out[kTile][kTile];
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kTile) {
    const int rows = static_cast<int>(std::min<int64_t>(kTile, n_end - n0));
    w.From(weights, blocks, n0, rows, chunks);
    for (int64_t t = 0; t * kTile < p.m; ++t) {
      __m512 acc[kTile];
      TileProduct<Block>(w, x, t, chunks, acc);
      for (int i = 0; i < kTile; ++i) _mm512_store_ps(out[i], acc[i]);
      const int64_t m_rows = std::min<int64_t>(kTile, p.m - t * kTile);
      for (int64_t j = 0; j < m_rows; ++j) {
        float* dst = p.out + (t * kTile + j) * p.out_stride + n0;
        for (int i = 0; i < rows; ++i) dst[i] = out[i][j];
      }
    }
  }
  _tile_release();
}

}  // namespace

bool GrantTiles() {
  // Linux hands out the tile data state (XTILEDATA, feature 18) on request only.
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  switch (p.w_type) {
    case WeightType::kQ8_0:
      return Range<BlockQ8_0>(p, n_begin, n_end);
    case WeightType::kQ4_0:
      return Range<BlockQ4_0>(p, n_begin, n_end);
    case WeightType::kQ4_1:
      return Range<BlockQ4_1>(p, n_begin, n_end);
    case WeightType::kQ5_0:
      return Range<BlockQ5_0>(p, n_begin, n_end);
    case WeightType::kQ5_1:
      return Range<BlockQ5_1>(p, n_begin, n_end);
    case WeightType::kQ4_K:
      return Range<BlockQ4_K>(p, n_begin, n_end);
    case WeightType::kQ5_K:
      return Range<BlockQ5_K>(p, n_begin, n_end);
    default:
      return Range<BlockQ6_K>(p, n_begin, n_end);
  }
}

}  // namespace arbor::kernels::amx

#undef ARBOR_TMM_C0
#undef ARBOR_TMM_C1
#undef ARBOR_TMM_A0
#undef ARBOR_TMM_A1
#undef ARBOR_TMM_B0
#undef ARBOR_TMM_B1
