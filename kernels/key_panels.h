// Attention's K rows transposed into panels of keys, and the scores of queries against them with
// simd::DotRows' bits: the fast path of a prompt's scores, where many queries meet the same keys.
//
// DotRows reads a K row along its dimensions, so each score ends as eight partial sums (over the
// dimensions ≡ l mod 8) added across lanes: those shuffles cost about as much as the products.
// A panel holds L::kWidth keys as [dim][kWidth] floats, so that one vector holds one dimension
// of all its keys and a score is a lane: its eight partial sums are eight vectors, each a chain
// of FMAs in DotRows' order, added as DotRows adds its lanes, ((0+1)+(2+3))+((4+5)+(6+7)), and
// scaled (a build without AVX2 adds each score's products in order, as its DotRows does). Every
// score is therefore the same bits as DotRows gives it, on any instruction set, so a token's
// scores do not depend on whether it came in a prompt or alone. Transposing costs one pass over
// the keys; a caller does it once for all the queries that meet them.
#ifndef ARBOR_KERNELS_KEY_PANELS_H_
#define ARBOR_KERNELS_KEY_PANELS_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/cpu/cpu_simd.h"

namespace arbor::kernels::simd {

#ifdef ARBOR_CPU_AVX512
using PanelLanes = Lanes16;
#elif defined(ARBOR_CPU_AVX2)
using PanelLanes = Lanes8;
#endif
// Keys per panel: a vector's lanes.
#ifdef ARBOR_CPU_AVX512
constexpr int64_t kPanelKeys = 16;
#else
constexpr int64_t kPanelKeys = 8;
#endif

// Queries that one DotPanels pass takes at most (a caller puts two rows' heads in one call where
// they fit): as many as AVX-512's 32 registers hold beside two panels' chains; four with AVX2's 16
// (and in the scalar build, where any count runs alike).
#ifdef ARBOR_CPU_AVX512
constexpr int kPanelPassQueries = 6;
#else
constexpr int kPanelPassQueries = 4;
#endif

// Whether DotPanels gives DotRows' bits for keys of `dim` (else a caller uses DotRows): where
// DotRows runs its vector form, a multiple of 8 dimensions; without AVX2, any (both then add each
// score's products in order).
inline bool PanelsServe(int64_t dim) {
#ifdef ARBOR_CPU_AVX2
  return dim % 8 == 0;
#else
  return dim > 0;
#endif
}

// Floats of the panels of n keys of `dim` (whole panels; a last partial one padded with zeros).
inline int64_t PanelFloats(int64_t n, int64_t dim) {
  return (n + kPanelKeys - 1) / kPanelKeys * kPanelKeys * dim;
}

#ifdef ARBOR_CPU_AVX2
// v[0, 8) transposed in place: lane j of v[i] becomes lane i of v[j].
inline void Transpose8x8(__m256 (&v)[8]) {
  __m256 pairs[8], quads[8];
  for (int i = 0; i < 8; i += 2) {
    pairs[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
    pairs[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    for (int h = 0; h < 2; ++h) {
      quads[i + 2 * h] = _mm256_shuffle_ps(pairs[i + h], pairs[i + h + 2], 0x44);
      quads[i + 2 * h + 1] = _mm256_shuffle_ps(pairs[i + h], pairs[i + h + 2], 0xEE);
    }
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_permute2f128_ps(quads[i], quads[i + 4], 0x20);
    v[i + 4] = _mm256_permute2f128_ps(quads[i], quads[i + 4], 0x31);
  }
}
#endif

// rows[0, n) (fp32 or bf16) as panels: key j's dimension d at panels[(j / W)·dim·W + d·W + j % W],
// W = kPanelKeys; the last panel's missing keys are zeros. dim: one PanelsServe takes (with AVX2,
// eight keys by eight dimensions at a time through registers).
template <typename T>
inline void TransposeKeys(const T* const* rows, int64_t n, int64_t dim, float* panels) {
  for (int64_t p0 = 0; p0 < n; p0 += kPanelKeys) {
    float* panel = panels + p0 * dim;
    const int64_t count = std::min(kPanelKeys, n - p0);
#ifdef ARBOR_CPU_AVX2
    for (int64_t k0 = 0; k0 < kPanelKeys; k0 += 8) {
      for (int64_t d0 = 0; d0 < dim; d0 += 8) {
        __m256 v[8];
        for (int64_t k = 0; k < 8; ++k) {
          v[k] = k0 + k < count ? Load8(rows[p0 + k0 + k] + d0) : _mm256_setzero_ps();
        }
        Transpose8x8(v);
        for (int64_t i = 0; i < 8; ++i) {
          _mm256_storeu_ps(panel + (d0 + i) * kPanelKeys + k0, v[i]);
        }
      }
    }
#else
    for (int64_t k = 0; k < kPanelKeys; ++k) {
      for (int64_t d = 0; d < dim; ++d) {
        panel[d * kPanelKeys + k] = k < count ? LoadScalar(rows[p0 + k] + d) : 0.0f;
      }
    }
#endif
  }
}

#ifdef ARBOR_CPU_AVX2
// G queries (a, `dim` apart) against KG consecutive panels, `n` of their keys stored
// (out[g·out_stride + j]): per query and panel, the partial sums l and l + 1 as two FMA chains at
// a time, folded into DotRows' tree as they finish.
template <int G, int KG>
inline void DotPanelsTile(const float* a, const float* panels, int64_t n, int64_t dim, float scale,
                          float* out, int64_t out_stride) {
  using L = PanelLanes;
  using V = typename L::V;
  const int64_t panel_floats = dim * kPanelKeys;
  V low[G][KG], high[G][KG];  // ((0+1)+(2+3)) and ((4+5)+(6+7)) as they build up.
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    for (int p = 0; p < KG; ++p) low[g][p] = high[g][p] = L::Zero();
  }
#pragma GCC unroll 4
  for (int l = 0; l < 8; l += 2) {
    V even[G][KG], odd[G][KG];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      for (int p = 0; p < KG; ++p) even[g][p] = odd[g][p] = L::Zero();
    }
    for (int64_t d = l; d < dim; d += 8) {
      V k_even[KG], k_odd[KG];
#pragma GCC unroll 4
      for (int p = 0; p < KG; ++p) {
        // In registers, loaded once for the G queries (GCC would fold a load into each FMA, and
        // the loads, two per FMA with the broadcasts, would bound the loop).
        k_even[p] = Held(L::Load(panels + p * panel_floats + d * kPanelKeys));
        k_odd[p] = Held(L::Load(panels + p * panel_floats + (d + 1) * kPanelKeys));
      }
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
        const V q_even = L::Set1(a[g * dim + d]), q_odd = L::Set1(a[g * dim + d + 1]);
#pragma GCC unroll 4
        for (int p = 0; p < KG; ++p) {
          even[g][p] = L::Fma(q_even, k_even[p], even[g][p]);
          odd[g][p] = L::Fma(q_odd, k_odd[p], odd[g][p]);
        }
      }
    }
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      for (int p = 0; p < KG; ++p) {
        const V pair = L::Add(even[g][p], odd[g][p]);
        V& half = l < 4 ? low[g][p] : high[g][p];
        half = l % 4 == 0 ? pair : L::Add(half, pair);
      }
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    for (int p = 0; p < KG; ++p) {
      const V scores = L::Mul(L::Add(low[g][p], high[g][p]), L::Set1(scale));
      const int64_t j = p * kPanelKeys;
      if (n - j >= kPanelKeys) {
        L::Store(out + g * out_stride + j, scores);
      } else if (n > j) {
        float lanes[kPanelKeys];
        L::Store(lanes, scores);
        std::copy(lanes, lanes + (n - j), out + g * out_stride + j);
      }
    }
  }
}

// Panels side by side per pass, for G queries: two, each key vector then serving twice the
// queries' FMAs, wherever the chains fit (AVX-512 from one to six queries, though from four on the
// finished halves go to the stack: still 1.25–1.55× one panel a pass at four queries, which loads
// one vector per FMA and a quarter more); AVX2 one for more than one query.
template <int G>
constexpr int kPanelsPerPass = PanelLanes::kWidth == 16 ? 2 : (G <= 1 ? 2 : 1);

// DotPanelsTile over n keys for G queries.
template <int G>
inline void DotPanelsQueries(const float* a, const float* panels, int64_t n, int64_t dim,
                             float scale, float* out, int64_t out_stride) {
  constexpr int KG = kPanelsPerPass<G>;
  const int64_t panel_floats = dim * kPanelKeys;
  int64_t j = 0;
  for (; j + KG * kPanelKeys <= n; j += KG * kPanelKeys) {
    DotPanelsTile<G, KG>(a, panels + j / kPanelKeys * panel_floats, KG * kPanelKeys, dim, scale,
                         out + j, out_stride);
  }
  for (; j < n; j += kPanelKeys) {
    DotPanelsTile<G, 1>(a, panels + j / kPanelKeys * panel_floats, n - j, dim, scale, out + j,
                        out_stride);
  }
}

#endif  // ARBOR_CPU_AVX2

// out[g·out_stride + j] = scale · Σ_i a[g·dim + i]·key_j[i] for g in [0, queries), j in [0, n),
// the keys in `panels` (TransposeKeys; n at most theirs; dim one PanelsServe takes): what DotRows
// gives for the same rows, bit for bit.
inline void DotPanels(const float* a, int64_t queries, const float* panels, int64_t n, int64_t dim,
                      float scale, float* out, int64_t out_stride) {
#ifdef ARBOR_CPU_AVX2
  using Queries = void (*)(const float*, const float*, int64_t, int64_t, float, float*, int64_t);
  static constexpr auto kQueries = []<size_t... G>(std::index_sequence<G...>) {
    return std::array<Queries, kPanelPassQueries>{DotPanelsQueries<G + 1>...};
  }
  (std::make_index_sequence<kPanelPassQueries>());
  for (int64_t g = 0; g < queries; g += kPanelPassQueries) {
    kQueries[std::min<int64_t>(queries - g, kPanelPassQueries) - 1](
        a + g * dim, panels, n, dim, scale, out + g * out_stride, out_stride);
  }
#else
  for (int64_t g = 0; g < queries; ++g) {
    for (int64_t j = 0; j < n; ++j) {
      const float* key = panels + j / kPanelKeys * kPanelKeys * dim + j % kPanelKeys;
      float sum = 0.0f;
      for (int64_t d = 0; d < dim; ++d) sum += a[g * dim + d] * key[d * kPanelKeys];
      out[g * out_stride + j] = sum * scale;
    }
  }
#endif
}

}  // namespace arbor::kernels::simd

#endif  // ARBOR_KERNELS_KEY_PANELS_H_
