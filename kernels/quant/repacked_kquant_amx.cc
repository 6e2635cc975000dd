// The AMX kernel of the K-quant repacked rows (WeightType::kQ4Kx8, kQ5Kx8, kQ6Kx8:
// repacked_rows.h) against per-256 activations (q8k_activations.h) for many activation rows,
// giving the AVX-512 kernel's bits (repacked_kquant_avx512vnni.cc), so that a Q4_K_M file's
// prefill and sibling branches run on tiles in the batch-invariant numerics.
//
// Why the bits match: per super-block, the AVX-512 kernel sums in integers each sub-block's (Q6_K:
// each 16-weight group's) exact products times its weight scale, and, for Q4_K and Q5_K, the
// minimums times the activations' sums; then it converts each integer once and adds it with one
// FMA (scaled by d·d_x, the minimums' by dmin·d_x) into its own float sum, and subtracts the two
// sums at the end. Integer sums are exact in any order, so here the tiles compute the same
// integers another way, and the float ops follow in the AVX-512 kernel's order.
//
// Why planes: a tile sums its products in its own registers, but each sub-block's products must
// be multiplied by that sub-block's scale, which varies by weight row. Taking the sums out of the
// tiles per sub-block to scale them (a store, a reload and a multiply per row) cost more than the
// products. Instead the scales go into the weights: scale·q does not fit a byte, but its digits
// do, so each weight row's bytes are written once per call as q·digit, one B tile plane per
// digit, and each plane's tile sums every sub-block of a super-block with no interruption.
// Q4_K and Q5_K: scale = 8·hi + lo (digits 0…7, q·digit ≤ 31·7 < 256, unsigned). Q6_K: its
// signed scale = 64·a + 16·b + 4·c + d (a of −2…1, the others 0…3) against q of 0…63 (a's plane
// signed, q·a ≥ −126), and the −32 of q − 32 is taken back per 16-weight group from the
// activations' sums in integers. Each super-block's planes then leave the tiles once, weighted
// by their digit's place, and meet the float ops.
//
// Each pair of groups (sixteen weight rows) is unpacked once per call, then read by every
// activation tile; a lone group of eight (a range that starts or ends mid-pair) goes to the
// AVX-512 kernel, which gives the same bits.
//
// Compiled with AMX and AVX-512 (kernels/CMakeLists.txt); runs only where CpuRunsQ8Isa(kAmx).
#define ARBOR_QUANT_ISA_NS amx
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/quant/amx_tiles.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_rows.h"
#include "kernels/quant/repacked_zmm_rows.h"

namespace arbor::kernels::amx {
namespace {

constexpr int kTileBytes = 1024;  // Every tile here: 16 rows × 64 bytes.
constexpr int kChunks = 4;        // k = 64 chunks of a super-block.

// Lanes 0 … 7 from row r's dword 2r + e of `first`, lanes 8 … 15 from `second`'s: one B tile
// row of two groups' vectors, whose qword r holds eight bytes of row r.
inline __m512i TileRow(__m512i first, __m512i second, int e) {
  const __m512i index =
      _mm512_add_epi32(_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
                       _mm512_set1_epi32(e));
  return _mm512_permutex2var_epi32(first, index, second);
}
// Eight bytes of each group's row field, widened to sixteen int32 lanes (rows 0 … 15).
inline __m512i Lanes(const void* first, const void* second, bool is_signed) {
  int64_t a, b;
  std::memcpy(&a, first, 8);
  std::memcpy(&b, second, 8);
  const __m128i bytes = _mm_set_epi64x(b, a);
  return is_signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
}
inline __m512 Halves(const uint16_t* first, const uint16_t* second) {
  const __m256i h = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(second)),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(first)));
  return _mm512_cvtph_ps(h);
}
// Each byte of `q` times its dword lane's `digit` (an int32 lane of small values), kept as a
// byte: the products fit one (unsigned, or signed for Q6_K's top digit).
inline __m512i TimesDigit(__m512i q, __m512i digit) {
  const __m512i words = _mm512_or_si512(_mm512_and_si512(digit, _mm512_set1_epi32(0xffff)),
                                        _mm512_slli_epi32(digit, 16));
  const __m512i low = _mm512_set1_epi16(0x00ff);
  const __m512i even = _mm512_mullo_epi16(_mm512_and_si512(q, low), words);
  const __m512i odd = _mm512_mullo_epi16(_mm512_srli_epi16(q, 8), words);
  return _mm512_or_si512(_mm512_and_si512(even, low), _mm512_slli_epi16(odd, 8));
}
// `row` (of a B tile plane) as q·digit for each digit plane.
template <int kPlanes>
inline void PutPlanes(__m512i q, const __m512i (&digits)[kPlanes], uint8_t* (&planes)[kPlanes],
                      int row) {
  for (int plane = 0; plane < kPlanes; ++plane) {
    _mm512_storeu_si512(planes[plane] + 64 * row, TimesDigit(q, digits[plane]));
  }
}

// Q4_K and Q5_K: w = d·scale·q − dmin·minimum per 32-weight sub-block.
template <typename BlockType>
struct Q4KLike {
  using Block = BlockType;
  static constexpr bool kFifth = std::is_same_v<Block, Q5Kx8Block>;
  static constexpr int kPlanes = 2;  // hi, lo.
  static constexpr int kPairs = 4;
  struct alignas(64) Unpacked {
    // Plane, k = 64 chunk (sub-blocks 2c and 2c + 1): q·digit as a B tile.
    uint8_t planes[kPlanes][kChunks][kTileBytes];
    int32_t minimums[4][16];  // Minimums of sub-blocks 2k and 2k + 1 as an int16 pair.
    float d[16], dmin[16];
  };

  static const Q4Kx8Block& Low(const Block& block) {
    if constexpr (kFifth) {
      return block.low;
    } else {
      return block;
    }
  }

  static void Unpack(const Block& g0, const Block& g1, Unpacked& u) {
    const Q4Kx8Block& l0 = Low(g0);
    const Q4Kx8Block& l1 = Low(g1);
    const __m512i low = _mm512_set1_epi8(0x0f), fifth = _mm512_set1_epi8(0x10);
    for (int j = 0; j < 8; ++j) {
      const __m512i scale = Lanes(l0.scales[j], l1.scales[j], false);
      const __m512i digits[kPlanes] = {_mm512_srli_epi32(scale, 3),
                                       _mm512_and_si512(scale, _mm512_set1_epi32(7))};
      uint8_t* planes[kPlanes] = {u.planes[0][j / 2], u.planes[1][j / 2]};
      for (int t = 0; t < 4; ++t) {
        const __m512i r0 = _mm512_loadu_si512(l0.qs[j / 2] + 64 * t);
        const __m512i r1 = _mm512_loadu_si512(l1.qs[j / 2] + 64 * t);
        __m512i n0 = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(r0, 4) : r0, low);
        __m512i n1 = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(r1, 4) : r1, low);
        if constexpr (kFifth) {
          // Bit j of each byte of qh to bit 4: (placed & 0x10) | q.
          auto place = [j](__m512i bits) {
            return j < 4 ? _mm512_slli_epi16(bits, 4 - j) : _mm512_srli_epi16(bits, j - 4);
          };
          n0 =
              _mm512_ternarylogic_epi32(place(_mm512_loadu_si512(g0.qh + 64 * t)), fifth, n0, 0xEA);
          n1 =
              _mm512_ternarylogic_epi32(place(_mm512_loadu_si512(g1.qh + 64 * t)), fifth, n1, 0xEA);
        }
        // Within its chunk, sub-block j's weights 4s … 4s + 3 are tile row 8·(j % 2) + s.
        for (int e = 0; e < 2; ++e)
          PutPlanes(TileRow(n0, n1, e), digits, planes, 8 * (j % 2) + 2 * t + e);
      }
    }
    for (int k = 0; k < 4; ++k) {
      const __m512i first = Lanes(l0.mins[2 * k], l1.mins[2 * k], false);
      const __m512i second = Lanes(l0.mins[2 * k + 1], l1.mins[2 * k + 1], false);
      _mm512_store_si512(u.minimums[k], _mm512_or_si512(first, _mm512_slli_epi32(second, 16)));
    }
    _mm512_store_ps(u.d, Halves(l0.d, l1.d));
    _mm512_store_ps(u.dmin, Halves(l0.dmin, l1.dmin));
  }

  // Per activation row and super-block, for the minimums: the sums of sub-blocks 2k and 2k + 1
  // as an int16 pair (each ≤ 32·127).
  static void Pairs(const Q8KRow& x, int64_t b, int32_t* pairs) {
    for (int k = 0; k < kPairs; ++k) {
      const int16_t* s = x.sums + 16 * b + 4 * k;
      const uint32_t first = static_cast<uint16_t>(s[0] + s[1]);
      const uint32_t second = static_cast<uint16_t>(s[2] + s[3]);
      pairs[k] = static_cast<int32_t>(first | second << 16);
    }
  }
};

// Q6_K: w = d·scale·(q − 32) per 16 weights.
struct Q6K {
  using Block = Q6Kx8Block;
  static constexpr int kPlanes = 4;  // a (signed), b, c, d.
  static constexpr int kPairs = 0;
  struct alignas(64) Unpacked {
    uint8_t planes[kPlanes][kChunks][kTileBytes];  // Chunk c: groups 4c … 4c + 3.
    int32_t scales[8][16];  // Scales of groups 2t and 2t + 1 as an int16 pair.
    float d[16];
  };

  static void Unpack(const Block& g0, const Block& g1, Unpacked& u) {
    for (int group = 0; group < 16; ++group) {
      const __m512i scale = Lanes(g0.scales[group], g1.scales[group], true);
      const __m512i a = _mm512_srai_epi32(scale, 6);
      const __m512i rest = _mm512_sub_epi32(scale, _mm512_slli_epi32(a, 6));
      const __m512i three = _mm512_set1_epi32(3);
      const __m512i digits[kPlanes] = {a, _mm512_srli_epi32(rest, 4),
                                       _mm512_and_si512(_mm512_srli_epi32(rest, 2), three),
                                       _mm512_and_si512(rest, three)};
      const int c = group / 4;
      uint8_t* planes[kPlanes] = {u.planes[0][c], u.planes[1][c], u.planes[2][c], u.planes[3][c]};
      for (int t = 0; t < 4; ++t) {
        const __m512i row =
            TileRow(Q6KWeights(g0, group / 2, t), Q6KWeights(g1, group / 2, t), group % 2);
        PutPlanes(row, digits, planes, 4 * (group % 4) + t);
      }
    }
    for (int t = 0; t < 8; ++t) {
      const __m512i first = Lanes(g0.scales[2 * t], g1.scales[2 * t], true);
      const __m512i second = Lanes(g0.scales[2 * t + 1], g1.scales[2 * t + 1], true);
      const __m512i pair = _mm512_or_si512(_mm512_and_si512(first, _mm512_set1_epi32(0xffff)),
                                           _mm512_slli_epi32(second, 16));
      _mm512_store_si512(u.scales[t], pair);
    }
    _mm512_store_ps(u.d, Halves(g0.d, g1.d));
  }
};

// For Q4_K and Q5_K, each activation row's sums as K::Pairs packs them: [m, blocks, kPairs].
template <typename K>
std::vector<int32_t> PackedPairs(const Q8KDotParams& p, int64_t blocks) {
  std::vector<int32_t> pairs;
  if constexpr (K::kPairs > 0) {
    pairs.resize(p.m * blocks * K::kPairs);
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t b = 0; b < blocks; ++b) {
        K::Pairs(p.rows[i], b, pairs.data() + (i * blocks + b) * K::kPairs);
      }
    }
  }
  return pairs;
}

// A super-block's planes for the tile of activations at `a`: each plane's C tile (tiles 0 …
// kPlanes − 1) sums the four chunks, then is stored to out[plane]. With two planes the chunks
// alternate between two sets of A and B tiles, so that loading the next chunk need not wait for
// the products of the last. Literal tile numbers: the intrinsics paste them into the instruction.
template <typename K, int kChunk>
[[gnu::always_inline]] inline void Chunk(const typename K::Unpacked& u, const int8_t* a,
                                         int64_t stride) {
  const int8_t* x = a + 64 * kChunk;
  if constexpr (K::kPlanes == 2 && kChunk % 2 == 0) {
    _tile_loadd(2, x, stride);
    _tile_loadd(3, u.planes[0][kChunk], 64);
    _tile_dpbsud(0, 2, 3);
    _tile_loadd(4, u.planes[1][kChunk], 64);
    _tile_dpbsud(1, 2, 4);
  } else if constexpr (K::kPlanes == 2) {
    _tile_loadd(5, x, stride);
    _tile_loadd(6, u.planes[0][kChunk], 64);
    _tile_dpbsud(0, 5, 6);
    _tile_loadd(7, u.planes[1][kChunk], 64);
    _tile_dpbsud(1, 5, 7);
  } else {
    _tile_loadd(4, x, stride);
    _tile_loadd(5, u.planes[0][kChunk], 64);
    _tile_dpbssd(0, 4, 5);  // The signed top digit.
    _tile_loadd(6, u.planes[1][kChunk], 64);
    _tile_dpbsud(1, 4, 6);
    _tile_loadd(7, u.planes[2][kChunk], 64);
    _tile_dpbsud(2, 4, 7);
    _tile_loadd(5, u.planes[3][kChunk], 64);
    _tile_dpbsud(3, 4, 5);
  }
}
template <typename K>
[[gnu::always_inline]] inline void Planes(const typename K::Unpacked& u, const int8_t* a,
                                          int64_t stride, int32_t (&out)[K::kPlanes][16][16]) {
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (K::kPlanes == 4) {
    _tile_zero(2);
    _tile_zero(3);
  }
  Chunk<K, 0>(u, a, stride);
  Chunk<K, 1>(u, a, stride);
  Chunk<K, 2>(u, a, stride);
  Chunk<K, 3>(u, a, stride);
  _tile_stored(0, out[0], 64);
  _tile_stored(1, out[1], 64);
  if constexpr (K::kPlanes == 4) {
    _tile_stored(2, out[2], 64);
    _tile_stored(3, out[3], 64);
  }
}

// Two planes for two activation tiles at once (C tiles 0, 1 and 2, 3), the B tiles loaded once
// for both: four independent sums in flight, where one tile's two wait on each other's latency.
template <int kChunk>
[[gnu::always_inline]] inline void ChunkOfTwo(const uint8_t* hi, const uint8_t* lo,
                                              const int8_t* a0, const int8_t* a1, int64_t stride) {
  _tile_loadd(6, hi, 64);
  _tile_loadd(7, lo, 64);
  _tile_loadd(4, a0 + 64 * kChunk, stride);
  _tile_dpbsud(0, 4, 6);
  _tile_dpbsud(1, 4, 7);
  _tile_loadd(5, a1 + 64 * kChunk, stride);
  _tile_dpbsud(2, 5, 6);
  _tile_dpbsud(3, 5, 7);
}
template <typename K>
[[gnu::always_inline]] inline void PlanesOfTwo(const typename K::Unpacked& u, const int8_t* a0,
                                               const int8_t* a1, int64_t stride,
                                               int32_t (&out)[2][K::kPlanes][16][16]) {
  static_assert(K::kPlanes == 2);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  ChunkOfTwo<0>(u.planes[0][0], u.planes[1][0], a0, a1, stride);
  ChunkOfTwo<1>(u.planes[0][1], u.planes[1][1], a0, a1, stride);
  ChunkOfTwo<2>(u.planes[0][2], u.planes[1][2], a0, a1, stride);
  ChunkOfTwo<3>(u.planes[0][3], u.planes[1][3], a0, a1, stride);
  _tile_stored(0, out[0][0], 64);
  _tile_stored(1, out[0][1], 64);
  _tile_stored(2, out[1][0], 64);
  _tile_stored(3, out[1][1], 64);
}

// Per activation row of a tile, its float sums: the products', and for Q4_K and Q5_K the
// minimums', as the AVX-512 kernel keeps them in a row's even and odd lanes.
struct alignas(64) TileSums {
  float products[kTileRows][16] = {};
  float minimums[kTileRows][16] = {};
};

// Super-block b's planes `c` (activation row j, weight rows in lanes) into the float sums of the
// tile's first `rows` rows.
template <typename K>
void AddSuperBlock(const typename K::Unpacked& u, const int32_t (&c)[K::kPlanes][16][16],
                   const Q8KDotParams& p, const std::vector<int32_t>& pairs, int64_t blocks,
                   int64_t b, int64_t row0, int rows, TileSums& s) {
  const __m512 d = _mm512_load_ps(u.d);
  for (int j = 0; j < rows; ++j) {
    const Q8KRow& row = p.rows[row0 + j];
    const __m512 dx = _mm512_set1_ps(row.d[b]);
    __m512i total;
    if constexpr (K::kPlanes == 2) {
      total = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c[0][j]), 3),
                               _mm512_load_si512(c[1][j]));
      const int32_t* row_pairs = pairs.data() + ((row0 + j) * blocks + b) * K::kPairs;
      __m512i offset = _mm512_setzero_si512();
      for (int k = 0; k < K::kPairs; ++k) {
        offset = _mm512_dpwssd_epi32(offset, _mm512_load_si512(u.minimums[k]),
                                     _mm512_set1_epi32(row_pairs[k]));
      }
      const __m512 dmin = _mm512_mul_ps(_mm512_load_ps(u.dmin), dx);
      _mm512_store_ps(s.minimums[j], _mm512_fmadd_ps(_mm512_cvtepi32_ps(offset), dmin,
                                                     _mm512_load_ps(s.minimums[j])));
    } else {
      total = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c[0][j]), 6),
                                                _mm512_slli_epi32(_mm512_load_si512(c[1][j]), 4)),
                               _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c[2][j]), 2),
                                                _mm512_load_si512(c[3][j])));
      // The zero point: 32·Σ scale·Σx per group, from the activations' sums per 16 (pairs of
      // int16, as the scales' pairs).
      __m512i zero_point = _mm512_setzero_si512();
      for (int t = 0; t < 8; ++t) {
        int32_t pair;
        std::memcpy(&pair, row.sums + 16 * b + 2 * t, 4);
        zero_point = _mm512_dpwssd_epi32(zero_point, _mm512_load_si512(u.scales[t]),
                                         _mm512_set1_epi32(pair));
      }
      total = _mm512_sub_epi32(total, _mm512_slli_epi32(zero_point, 5));
    }
    _mm512_store_ps(s.products[j], _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(d, dx),
                                                   _mm512_load_ps(s.products[j])));
  }
}

// Sixteen weight rows (groups g0 and g1) against every activation tile, super-block by
// super-block: each is unpacked once and stays in the L1 cache while the tiles pass over it
// (weights outer: the activations' tiles are the smaller read). The next tile's products are
// issued before this tile's float work, into the other buffer, so the two overlap.
template <typename K>
void PairPass(const typename K::Block* g0, const typename K::Block* g1, const Q8KDotParams& p,
              const ActivationTiles& tiles, const std::vector<int32_t>& pairs, float* out) {
  const int64_t blocks = p.rows[0].blocks;
  const int64_t tile_count = (p.m + kTileRows - 1) / kTileRows;
  thread_local typename K::Unpacked u;
  thread_local std::vector<TileSums> sums;
  sums.assign(tile_count, TileSums{});
  // Two planes: activation tiles two at a time (PlanesOfTwo); four: one at a time.
  constexpr int64_t kStep = K::kPlanes == 2 ? 2 : 1;
  alignas(64) int32_t c[2][kStep][K::kPlanes][16][16];
  auto rows_of = [&](int64_t t) {
    return static_cast<int>(std::min<int64_t>(kTileRows, p.m - 16 * t));
  };
  // The tile products of tiles t … t + kStep − 1 (those that exist) into buffer set `set`.
  auto issue = [&](int64_t b, int64_t t, int set) {
    if constexpr (kStep == 2) {
      if (t + 1 < tile_count) {
        return PlanesOfTwo<K>(u, tiles.Tile(16 * t, b), tiles.Tile(16 * (t + 1), b), tiles.stride(),
                              c[set]);
      }
    }
    Planes<K>(u, tiles.Tile(16 * t, b), tiles.stride(), c[set][0]);
  };
  for (int64_t b = 0; b < blocks; ++b) {
    K::Unpack(g0[b], g1[b], u);
    issue(b, 0, 0);
    for (int64_t t = 0; t < tile_count; t += kStep) {
      const int set = static_cast<int>(t / kStep % 2);
      if (t + kStep < tile_count) issue(b, t + kStep, 1 - set);
      for (int64_t i = 0; i < kStep && t + i < tile_count; ++i) {
        AddSuperBlock<K>(u, c[set][i], p, pairs, blocks, b, 16 * (t + i), rows_of(t + i),
                         sums[t + i]);
      }
    }
  }
  for (int64_t t = 0; t < tile_count; ++t) {
    for (int j = 0; j < rows_of(t); ++j) {
      __m512 result = _mm512_load_ps(sums[t].products[j]);
      if constexpr (K::kPairs > 0) {
        result = _mm512_sub_ps(result, _mm512_load_ps(sums[t].minimums[j]));
      }
      _mm512_storeu_ps(out + (16 * t + j) * p.out_stride, result);
    }
  }
}

template <typename K>
void GroupsRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  if (n_begin >= n_end) return;
  const auto* w = static_cast<const typename K::Block*>(p.w);
  const int64_t blocks = p.rows[0].blocks;
  // A group of eight on either side of the pairs.
  if (n_begin % 16 != 0) {
    avx512vnni::RepackedKQuantDotRange(p, n_begin, n_begin + 8);
    n_begin += 8;
  }
  if ((n_end - n_begin) % 16 != 0) {
    avx512vnni::RepackedKQuantDotRange(p, n_end - 8, n_end);
    n_end -= 8;
  }
  if (n_begin >= n_end) return;
  const std::vector<int32_t> pairs = PackedPairs<K>(p, blocks);
  thread_local std::vector<int8_t> storage;
  const ActivationTiles tiles(
      p.m, blocks, 256, [&](int64_t i) { return p.rows[i].q; }, storage);
  TileConfig config;
  for (int tile = 0; tile < 8; ++tile) config.Set(tile, kTileRows, 64);
  _tile_loadconfig(&config);
  for (int64_t n = n_begin; n < n_end; n += 16) {
    const typename K::Block* g0 = w + (n / 8) * blocks;
    PairPass<K>(g0, g0 + blocks, p, tiles, pairs, p.out + n);
  }
  _tile_release();
}

}  // namespace

void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ6Kx8) return GroupsRange<Q6K>(p, n_begin, n_end);
  if (p.w_type == WeightType::kQ5Kx8) return GroupsRange<Q4KLike<Q5Kx8Block>>(p, n_begin, n_end);
  GroupsRange<Q4KLike<Q4Kx8Block>>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::amx
