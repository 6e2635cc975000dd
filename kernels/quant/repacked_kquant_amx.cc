// The AMX kernel of the K-quant repacked rows (WeightType::kQ4Kx8, kQ5Kx8, kQ6Kx8:
// repacked_rows.h) against per-256 activations (q8k_activations.h) for many activation rows,
// giving the AVX-512 kernel's bits (repacked_kquant_avx512vnni.cc), so that a Q4_K_M file's
// prefill and sibling branches run on tiles in the batch-invariant numerics.
//
// Why the bits match: per super-block, the AVX-512 kernel sums in integers each sub-block's (Q6_K:
// each 16-weight group's) exact products times its weight scale, and, for Q4_K and Q5_K, the
// minimums times the activations' sums; then it converts each integer once and adds it with one
// FMA (scaled by d·d_x, the minimums' by dmin·d_x) into its own float sum, and subtracts the two
// sums at the end. Integer sums are exact in any order, so here the tiles compute the products
// of 16 activation rows × 16 weight rows (two repacked groups of eight) per sub-block (Q6_K: per
// group, k = 16), the scales are applied to the stored sums in integers, and the float ops
// follow in the AVX-512 kernel's order.
//
// Each pair of groups is unpacked once per call into B tiles and lane vectors, then read by every
// activation tile; a lone group of eight (a range that starts or ends mid-pair) goes to the
// AVX-512 kernel, which gives the same bits.
//
// Compiled with AMX and AVX-512 (kernels/CMakeLists.txt); runs only where CpuRunsQ8Isa(kAmx).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/quant/amx_tiles.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::kernels::amx {
namespace {

constexpr int kTileBytes = 512;  // A B tile of k = 32: 8 rows × 64 bytes.

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

// Q4_K and Q5_K: w = d·scale·q − dmin·minimum per 32-weight sub-block.
template <typename BlockType>
struct Q4KLike {
  using Block = BlockType;
  static constexpr bool kFifth = std::is_same_v<Block, Q5Kx8Block>;
  static constexpr int kProducts = 8;  // Tile products per super-block, each of k = 32.
  static constexpr int kK = 32;
  struct alignas(64) Unpacked {
    uint8_t q[8][kTileBytes];  // Sub-block j as a B tile.
    int32_t scales[8][16];     // Sub-block j's scale of each weight row.
    int32_t minimums[4][16];   // Minimums of sub-blocks 2k and 2k + 1 as an int16 pair.
    float d[16], dmin[16];
  };
  // Per activation row and super-block, for the minimums: the sums of sub-blocks 2k and 2k + 1
  // as an int16 pair (each ≤ 32·127).
  static constexpr int kPairs = 4;

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
    for (int p = 0; p < 4; ++p) {
      for (int t = 0; t < 4; ++t) {
        const __m512i r0 = _mm512_loadu_si512(l0.qs[p] + 64 * t);
        const __m512i r1 = _mm512_loadu_si512(l1.qs[p] + 64 * t);
        for (int h = 0; h < 2; ++h) {
          const int j = 2 * p + h;
          __m512i n0 = _mm512_and_si512(h ? _mm512_srli_epi16(r0, 4) : r0, low);
          __m512i n1 = _mm512_and_si512(h ? _mm512_srli_epi16(r1, 4) : r1, low);
          if constexpr (kFifth) {
            // Bit j of each byte of qh to bit 4: (placed & 0x10) | q.
            auto place = [j](__m512i bits) {
              return j < 4 ? _mm512_slli_epi16(bits, 4 - j) : _mm512_srli_epi16(bits, j - 4);
            };
            n0 = _mm512_ternarylogic_epi32(place(_mm512_loadu_si512(g0.qh + 64 * t)), fifth, n0,
                                           0xEA);
            n1 = _mm512_ternarylogic_epi32(place(_mm512_loadu_si512(g1.qh + 64 * t)), fifth, n1,
                                           0xEA);
          }
          for (int e = 0; e < 2; ++e) {
            _mm512_storeu_si512(u.q[j] + 64 * (2 * t + e), TileRow(n0, n1, e));
          }
        }
      }
    }
    for (int j = 0; j < 8; ++j) {
      _mm512_store_si512(u.scales[j], Lanes(l0.scales[j], l1.scales[j], false));
    }
    for (int k = 0; k < 4; ++k) {
      const __m512i first = Lanes(l0.mins[2 * k], l1.mins[2 * k], false);
      const __m512i second = Lanes(l0.mins[2 * k + 1], l1.mins[2 * k + 1], false);
      _mm512_store_si512(u.minimums[k], _mm512_or_si512(first, _mm512_slli_epi32(second, 16)));
    }
    _mm512_store_ps(u.d, Halves(l0.d, l1.d));
    _mm512_store_ps(u.dmin, Halves(l0.dmin, l1.dmin));
  }

  static void Pairs(const Q8KRow& x, int64_t b, int32_t (&pairs)[kPairs]) {
    for (int k = 0; k < kPairs; ++k) {
      const int16_t* s = x.sums + 16 * b + 4 * k;
      const uint32_t first = static_cast<uint16_t>(s[0] + s[1]);
      const uint32_t second = static_cast<uint16_t>(s[2] + s[3]);
      pairs[k] = static_cast<int32_t>(first | second << 16);
    }
  }
};

// Q6_K: w = d·scale·(q − 32) per 16 weights, q − 32 signed against the signed activations.
struct Q6K {
  using Block = Q6Kx8Block;
  static constexpr int kProducts = 16;  // Tile products per super-block, each of k = 16.
  static constexpr int kK = 16;
  struct alignas(64) Unpacked {
    uint8_t q[16][kTileBytes / 2];  // Group g as a B tile (4 rows × 64 bytes).
    int32_t scales[16][16];
    float d[16];
  };
  static constexpr int kPairs = 0;

  static void Unpack(const Block& g0, const Block& g1, Unpacked& u) {
    const __m512i low = _mm512_set1_epi8(0x0f), top = _mm512_set1_epi8(0x30);
    const __m512i zero_point = _mm512_set1_epi8(32);
    // A vector of row r's q − 32: weights 4t … 4t + 3 of group 2j in dword 2r, of 2j + 1 in
    // dword 2r + 1 (repacked_rows.h's Q6Kx8Block).
    auto weights = [&](const Block& g, int j, int t) {
      const __m512i l = _mm512_loadu_si512(g.low[j / 2] + 64 * t);
      const __m512i h = _mm512_loadu_si512(g.high[j / 4] + 64 * t);
      const __m512i bits03 = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(l, 4) : l, low);
      const int f = j % 4;
      const __m512i placed = f == 0   ? _mm512_slli_epi16(h, 4)
                             : f == 1 ? _mm512_slli_epi16(h, 2)
                             : f == 2 ? h
                                      : _mm512_srli_epi16(h, 2);
      return _mm512_sub_epi8(_mm512_ternarylogic_epi32(placed, top, bits03, 0xEA), zero_point);
    };
    for (int j = 0; j < 8; ++j) {
      for (int t = 0; t < 4; ++t) {
        const __m512i q0 = weights(g0, j, t), q1 = weights(g1, j, t);
        for (int e = 0; e < 2; ++e)
          _mm512_storeu_si512(u.q[2 * j + e] + 64 * t, TileRow(q0, q1, e));
      }
    }
    for (int g = 0; g < 16; ++g) {
      _mm512_store_si512(u.scales[g], Lanes(g0.scales[g], g1.scales[g], true));
    }
    _mm512_store_ps(u.d, Halves(g0.d, g1.d));
  }
};

// The activation rows of a call as A tiles (Q8KRow's integers, contiguous rows `stride` bytes
// apart, or copied so), and per row and super-block its scale and, for Q4_K and Q5_K, its sums
// as K::Pairs packs them.
template <typename K>
struct Activations {
  std::vector<int8_t> packed;  // Where the rows are not evenly spaced.
  std::vector<int32_t> pairs;  // [m, blocks, K::kPairs].
  const int8_t* q = nullptr;
  int64_t stride = 0;

  Activations(const Q8KDotParams& p, int64_t blocks) {
    const int64_t k = 256 * blocks;
    q = p.rows[0].q;
    stride = p.m > 1 ? p.rows[1].q - p.rows[0].q : k;
    bool even = stride >= k;
    for (int64_t i = 2; even && i < p.m; ++i) even = p.rows[i].q == q + i * stride;
    if (!even) {
      packed.resize(p.m * k);
      for (int64_t i = 0; i < p.m; ++i) std::memcpy(packed.data() + i * k, p.rows[i].q, k);
      q = packed.data();
      stride = k;
    }
    if constexpr (K::kPairs > 0) {
      pairs.resize(p.m * blocks * K::kPairs);
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t b = 0; b < blocks; ++b) {
          int32_t(&row)[K::kPairs] =
              *reinterpret_cast<int32_t(*)[K::kPairs]>(pairs.data() + (i * blocks + b) * K::kPairs);
          K::Pairs(p.rows[i], b, row);
        }
      }
    }
  }
};

// Tile product `index` of a super-block (k = K::kK) into C tile `c`, stored to `out`.
#define ARBOR_AMX_PRODUCT(c, a_tile, b_tile, a, stride, w, out) \
  do {                                                          \
    _tile_zero(c);                                              \
    _tile_loadd(a_tile, a, stride);                             \
    _tile_loadd(b_tile, w, 64);                                 \
    _tile_dpbssd(c, a_tile, b_tile);                            \
    _tile_stored(c, out, 64);                                   \
  } while (false)

// Σ scale·(exact products) of one super-block for the tile's 16 activation rows, weight rows in
// lanes: two tile products in flight, each stored and scaled in integers.
template <typename K>
[[gnu::always_inline]] inline void ScaledProducts(const typename K::Unpacked& u, const int8_t* a,
                                                  int64_t stride, __m512i (&total)[kTileRows]) {
  alignas(64) int32_t c0[16][16];
  alignas(64) int32_t c1[16][16];
  for (__m512i& v : total) v = _mm512_setzero_si512();
  for (int g = 0; g < K::kProducts; g += 2) {
    ARBOR_AMX_PRODUCT(0, 2, 4, a + K::kK * g, stride, u.q[g], c0);
    ARBOR_AMX_PRODUCT(1, 3, 5, a + K::kK * (g + 1), stride, u.q[g + 1], c1);
    const __m512i s0 = _mm512_load_si512(u.scales[g]);
    const __m512i s1 = _mm512_load_si512(u.scales[g + 1]);
#pragma GCC unroll 16
    for (int j = 0; j < kTileRows; ++j) {
      const __m512i first = _mm512_mullo_epi32(_mm512_load_si512(c0[j]), s0);
      const __m512i second = _mm512_mullo_epi32(_mm512_load_si512(c1[j]), s1);
      total[j] = _mm512_add_epi32(total[j], _mm512_add_epi32(first, second));
    }
  }
}

#undef ARBOR_AMX_PRODUCT

// The activation tile from row `row0` (`rows` of them) against sixteen unpacked weight rows.
template <typename K>
void TilePass(const std::vector<typename K::Unpacked>& w, const Q8KDotParams& p,
              const ActivationTiles& tiles, const Activations<K>& x, int64_t row0, int rows,
              float* out) {
  constexpr bool kMinimums = K::kPairs > 0;
  const int64_t blocks = static_cast<int64_t>(w.size());
  // Per row: the products' float sum, and the minimums' (Q4_K, Q5_K), as the AVX-512 kernel keeps
  // them in a row's even and odd lanes.
  alignas(64) float sums[kTileRows][16] = {};
  alignas(64) float minimums[kTileRows][16] = {};
  const int8_t* a = tiles.Tile(row0);
  for (int64_t b = 0; b < blocks; ++b) {
    const typename K::Unpacked& u = w[b];
    __m512i total[kTileRows];
    ScaledProducts<K>(u, a + 256 * b, tiles.stride(), total);
    const __m512 d = _mm512_load_ps(u.d);
    for (int j = 0; j < rows; ++j) {
      const __m512 dx = _mm512_set1_ps(p.rows[row0 + j].d[b]);
      _mm512_store_ps(sums[j], _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[j]), _mm512_mul_ps(d, dx),
                                               _mm512_load_ps(sums[j])));
      if constexpr (kMinimums) {
        const int32_t* pairs = x.pairs.data() + ((row0 + j) * blocks + b) * K::kPairs;
        __m512i offset = _mm512_setzero_si512();
        for (int k = 0; k < K::kPairs; ++k) {
          offset = _mm512_dpwssd_epi32(offset, _mm512_load_si512(u.minimums[k]),
                                       _mm512_set1_epi32(pairs[k]));
        }
        const __m512 dmin = _mm512_mul_ps(_mm512_load_ps(u.dmin), dx);
        _mm512_store_ps(minimums[j], _mm512_fmadd_ps(_mm512_cvtepi32_ps(offset), dmin,
                                                     _mm512_load_ps(minimums[j])));
      }
    }
  }
  for (int j = 0; j < rows; ++j) {
    __m512 result = _mm512_load_ps(sums[j]);
    if constexpr (kMinimums) result = _mm512_sub_ps(result, _mm512_load_ps(minimums[j]));
    _mm512_storeu_ps(out + (row0 + j) * p.out_stride, result);
  }
}

template <typename K>
void GroupsRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  const auto* w = static_cast<const typename K::Block*>(p.w);
  const int64_t blocks = p.rows[0].blocks;
  if (n_begin >= n_end) return;
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
  const Activations<K> x(p, blocks);
  const ActivationTiles tiles(x.q, p.m, x.stride);
  thread_local std::vector<typename K::Unpacked> unpacked;
  unpacked.resize(blocks);
  const TileConfig config = TileConfig::Products(K::kK);
  _tile_loadconfig(&config);
  for (int64_t n = n_begin; n < n_end; n += 16) {
    const typename K::Block* g0 = w + (n / 8) * blocks;
    const typename K::Block* g1 = g0 + blocks;
    for (int64_t b = 0; b < blocks; ++b) K::Unpack(g0[b], g1[b], unpacked[b]);
    for (int64_t row0 = 0; row0 < p.m; row0 += kTileRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - row0));
      TilePass<K>(unpacked, p, tiles, x, row0, rows, p.out + n);
    }
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
