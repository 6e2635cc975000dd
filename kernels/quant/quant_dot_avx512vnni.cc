// The quantized matmul's 8-bit-activation kernels for AVX-512 (F, BW, VL) with VNNI: vpdpbusd
// on zmm covers two 32-weight chunks per instruction, halving the per-row work of AVX-VNNI.
// Compiled with those extensions only (kernels/CMakeLists.txt).
#define ARBOR_QUANT_ISA_NS avx512vnni
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/quant/quant_dot_kernel.h"
#include "kernels/quant/quant_dot_q8k_kernel.h"
#include "kernels/quant/repacked_prefetch.h"
#include "kernels/quant/repacked_rows.h"
#include "kernels/quant/repacked_zmm_rows.h"
#include "kernels/quant/row_passes.h"

namespace arbor::kernels::avx512vnni {
namespace {

struct Isa {
  using VI = __m512i;
  using VF = __m512;
  static constexpr int kStep = 2;
  static constexpr int kRegisters = 32;
  static VI Combine(const ByteChunk* c) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(c[0].q), c[1].q, 1);
  }
  template <bool kSplit>
  static VF Scales(const ByteChunk* c) {
    if constexpr (!kSplit) {  // [s0 ×8, s1 ×8].
      const __m512d low = _mm512_castps_pd(_mm512_castps256_ps512(_mm256_set1_ps(c[0].s[0])));
      return _mm512_castpd_ps(
          _mm512_insertf64x4(low, _mm256_castps_pd(_mm256_set1_ps(c[1].s[0])), 1));
    }
    const __m128 four = _mm_setr_ps(c[0].s[0], c[0].s[1], c[1].s[0], c[1].s[1]);
    const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    return _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(four));
  }
  static VI Dot(VI u8, VI s8) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u8, s8); }
  // Q8_0: |w| as the unsigned operand and x negated where w < 0 (AVX-512 has no vpsignb).
  struct Signed {
    VI magnitude;
    __mmask64 negative;
  };
  static Signed PrepareSigned(VI w) { return {_mm512_abs_epi8(w), _mm512_movepi8_mask(w)}; }
  static VI DotSigned(const Signed& w, VI x) {
    return Dot(w.magnitude, _mm512_mask_sub_epi8(x, w.negative, _mm512_setzero_si512(), x));
  }
  static VI LoadX(const int8_t* q) { return _mm512_loadu_si512(q); }
  static VF LoadF(const float* f) { return _mm512_loadu_ps(f); }
  static VF ToFloat(VI v) { return _mm512_cvtepi32_ps(v); }
  static VF Mul(VF a, VF b) { return _mm512_mul_ps(a, b); }
  static VF Add(VF a, VF b) { return _mm512_add_ps(a, b); }
  static VF Fma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
  static VF Zero() { return _mm512_setzero_ps(); }
  static float Sum(VF v) { return _mm512_reduce_add_ps(v); }
  // For the per-256 kernel (quant_dot_q8k_kernel.h): 8 rows per pass, measured 1.3× (Q4_K) and
  // 1.5–1.8× (Q6_K) the per-32 kernel above at 8 rows.
  static constexpr int kQ8KRows = 8;
  static VI Pack(const __m256i* v) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(v[0]), v[1], 1);
  }
  static VI ScaledDot(VI w, VI x, VI s) { return _mm512_madd_epi16(_mm512_maddubs_epi16(w, x), s); }
  static VI AddI(VI a, VI b) { return _mm512_add_epi32(a, b); }
  static VI ZeroI() { return _mm512_setzero_si512(); }
  static VF Set1(float f) { return _mm512_set1_ps(f); }
};

// Activation rows against one or two consecutive groups of sixteen weight rows: per block, vector
// u of each group (weights 4u … 4u + 3 of its sixteen rows, unpacked to bytes) meets each
// activation row's four bytes u, broadcast once for every group, in vpdpbusd that sum the
// block's integer products; one conversion and FMA per row and group scale them. The order of a
// row's operations is the same whatever the pass's shape and the rows beside it, so its result
// does not depend on its batch or on how the groups were split between threads.
//
// The offsets: 4- and 5-bit weights add theirs (m·d_x·Σq, any m) into the block's float sum, an FMA
// before the products'; 8-bit weights (q + 128) start the block's integer sum at −128·Σq, which
// takes the offset back exactly and costs no instruction. From nine activation rows up two
// groups of four rows share each broadcast (4-bit: 1.1–1.2× one group of eight per matmul;
// SmolLM2 prefill +7–15 %); up to eight rows one group of eight takes them in one pass (two
// groups there: 8 sequences 7 % and one row 10 % slower end to end, the latter reading two
// weight streams at once).
//
// From 32 rows (eight passes) each group's nibbles are unpacked once per call into
// UnpackedBlocks (eight vectors of bytes, the scales and offsets in f32) that every pass loads,
// where each pass unpacked them again (a quarter of a two-group pass's vector work): Q4_1 at
// SmolLM2's shapes 1.01–1.07× at 32 and 48 rows, 1.1× at 64 and 128, 1.2–1.7× at 256; at 16
// rows storing and reloading them cost 5 % more than the four unpacks it saved.
constexpr int64_t kUnpackFromRows = 32;
// Two groups' 24 unpacked blocks (30 KB) stay in a 48 KB L1 data cache beside a pass's rows.
constexpr int64_t kSpanBlocks = 24;
struct alignas(64) UnpackedBlock {
  __m512i q[8];
  __m512 d, m;
};
// Whether a block's weights are nibbles with offsets (Q4x16Block, Q5x16Block, UnpackedBlock), not
// 8-bit ones.
template <typename Block>
constexpr bool kOffsets = !std::is_same_v<Block, Q8x16Block>;
template <typename Block>
constexpr bool kUnpacked = std::is_same_v<Block, UnpackedBlock>;
inline bool TwoGroups(int64_t m) { return m >= kTwoGroupsFromRows; }

// Vectors t and t + 4 of a block (the two halves of the same bytes where the weights are nibbles).
template <typename Block>
[[gnu::always_inline]] inline void Vectors(const Block& block, int t, __m512i& low, __m512i& high) {
  if constexpr (kUnpacked<Block>) {
    low = _mm512_load_si512(&block.q[t]);
    high = _mm512_load_si512(&block.q[t + 4]);
  } else {
    RowVectors(block, t, low, high);
  }
}

// A block's scales and (4- and 5-bit weights) offsets as f32.
template <typename Block>
[[gnu::always_inline]] inline void Scales(const Block& block, __m512& d, __m512& m) {
  if constexpr (kUnpacked<Block>) {
    d = _mm512_load_ps(&block.d);
    m = _mm512_load_ps(&block.m);
  } else {
    d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.d)));
    if constexpr (kOffsets<Block>) {
      m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.m)));
    }
  }
}

// Blocks w[g·blocks + i] (g < groups, i < len) unpacked into out[g·len + i].
template <typename Block>
void Unpack(const Block* w, int64_t blocks, int64_t len, int groups,
            std::vector<UnpackedBlock>& out) {
  out.resize(groups * len);
  for (int64_t i = 0; i < groups * len; ++i) {
    const Block& block = w[i / len * blocks + i % len];
    for (int t = 0; t < 4; ++t) {
      __m512i low, high;
      Vectors(block, t, low, high);
      _mm512_store_si512(&out[i].q[t], low);
      _mm512_store_si512(&out[i].q[t + 4], high);
    }
    __m512 d, m;
    Scales(block, d, m);
    _mm512_store_ps(&out[i].d, d);
    _mm512_store_ps(&out[i].m, m);
  }
}

// Block b's products for R activation rows and G groups (group g's weights at w[g·group_stride])
// added into their sums (arrays the caller keeps in registers: never index them by a run-time
// value, which puts them on the stack). Vectors t and t + 4 of every group meet all R rows before
// the next pair is loaded, so that the rows' chains of vpdpbusd interleave (one row's eight after
// the other's, each chain's latency held the next back: Q8_0 1.08× at 8 rows and 1.17–1.20× at
// 64–256, Q4_1 1.17–1.20× at 8–16). Fewer than four chains split each in two, added at the end.
// Integer sums: the order of a chain's products changes no bit.
template <int R, int G, typename Block>
[[gnu::always_inline]] inline void RowsBlock(
    const Block* w, int64_t group_stride, const int8_t* const (&xq)[R], const float* const (&xd)[R],
    const float* const (&xs)[R], const int32_t* const (&xi)[R], int64_t b, __m512 (&acc)[G][R]) {
  constexpr int kChains = G * R < 4 ? 2 : 1;
  // Few rows of 4-bit weights: the high nibbles stay in place (16·q), so their chain sums 16
  // times their products, exactly (|Σ| ≤ 16·240·128 < 2^31), and one shift per row and group
  // takes it back instead of one per vector (one row 1.08–1.09×; the same bits).
  constexpr bool kHighBySixteen = kChains == 2 && std::is_same_v<Block, Q4x16Block>;
  __m512 d[G], m[G];
  __m512i sum[G][R][kChains];
#pragma GCC unroll 2
  for (int g = 0; g < G; ++g) {
    if constexpr (!kUnpacked<Block>) {
      // Blocks ahead (into the next group at the end: groups are consecutive), so the weights
      // stream at the memory's rate instead of waiting on each load.
      const char* ahead = reinterpret_cast<const char*>(
          &w[g * group_stride] + RepackedPrefetchBlocks(sizeof(Block), G * R, kZmmPrefetchBytes));
      for (size_t line = 0; line < sizeof(Block); line += 64) {
        _mm_prefetch(ahead + line, _MM_HINT_T0);
      }
    }
    Scales(w[g * group_stride], d[g], m[g]);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      sum[g][r][0] = kOffsets<Block> ? _mm512_setzero_si512() : _mm512_set1_epi32(-128 * xi[r][b]);
      if constexpr (kChains == 2) sum[g][r][1] = _mm512_setzero_si512();
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < 4; ++t) {
    __m512i q[G][2];
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) {
      if constexpr (kHighBySixteen) {
        RowVectorsHighBySixteen(w[g * group_stride], t, q[g][0], q[g][1]);
      } else {
        Vectors(w[g * group_stride], t, q[g][0], q[g][1]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        int32_t four;
        std::memcpy(&four, xq[r] + 32 * b + 4 * (t + 4 * h), 4);
        const __m512i xu = _mm512_set1_epi32(four);
#pragma GCC unroll 2
        for (int g = 0; g < G; ++g) {
          sum[g][r][h % kChains] = _mm512_dpbusd_epi32(sum[g][r][h % kChains], q[g][h], xu);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 scale = _mm512_set1_ps(xd[r][8 * b]);
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) {
      __m512i total = sum[g][r][0];
      if constexpr (kHighBySixteen) {
        total = _mm512_add_epi32(total, _mm512_srai_epi32(sum[g][r][1], 4));
      } else if constexpr (kChains == 2) {
        total = _mm512_add_epi32(total, sum[g][r][1]);
      }
      if constexpr (kOffsets<Block>) {
        acc[g][r] = _mm512_fmadd_ps(m[g], _mm512_set1_ps(xs[r][24 * b]), acc[g][r]);
      }
      acc[g][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(d[g], scale), acc[g][r]);
    }
  }
}

// A pass over `blocks` blocks of x (group g's weights of block b at w[g·group_stride + b]). Its
// sums start at zero, or for unpacked spans at what `out` holds: zeros before the first span,
// then what the span before stored (floats stored and loaded exactly: the split changes no bit).
template <int R, int G, typename Block>
void RowsGroups(const Block* w, int64_t group_stride, int64_t blocks, const Q8Rows& x, int64_t row0,
                float* out, int64_t out_stride) {
  __m512 acc[G][R];
  const int8_t* xq[R];
  const float* xd[R];
  // Each row's whole-block sums d·Σq, the 4-bit offsets' factor, 24 floats apart (SumIndex).
  const float* xs[R];
  const int32_t* xi[R];  // Each row's Σq per block, the 8-bit offsets'.
  for (int r = 0; r < R; ++r) {
    xq[r] = x.q + 32 * (row0 + r) * x.stride;
    xd[r] = x.scales + 8 * (row0 + r) * x.stride;
    xs[r] = x.sums + SumIndex(row0 + r, 0, 2, x.stride);
    xi[r] = x.q_sums + (row0 + r) * x.stride;
    for (int g = 0; g < G; ++g) {
      acc[g][r] = kUnpacked<Block> ? _mm512_loadu_ps(out + (row0 + r) * out_stride + 16 * g)
                                   : _mm512_setzero_ps();
    }
  }
  for (int64_t b = 0; b < blocks; ++b) RowsBlock<R, G>(w + b, group_stride, xq, xd, xs, xi, b, acc);
  for (int g = 0; g < G; ++g) {
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(out + (row0 + r) * out_stride + 16 * g, acc[g][r]);
  }
}

template <typename Block, int G, int kRows>
void RowsRangeOf(const Block* group, int64_t group_stride, int64_t blocks, const Q8Rows& x,
                 const Q8DotParams& p, float* out) {
  using Groups = void (*)(const Block*, int64_t, int64_t, const Q8Rows&, int64_t, float*, int64_t);
  static constexpr auto kGroups = []<size_t... R>(std::index_sequence<R...>) {
    return std::array<Groups, kRows>{RowsGroups<R + 1, G, Block>...};
  }
  (std::make_index_sequence<kRows>());
  ForEachRowPass(p.m, kRows, [&](int64_t m0, int64_t rows) {
    kGroups[rows - 1](group, group_stride, blocks, x, m0, out, p.out_stride);
  });
}

// The activations from block `begin` on: every field shifted by that many blocks, the rows'
// stride kept (SumIndex's chunk is its inner index too).
Q8Rows FromBlock(const Q8Rows& x, int64_t begin) {
  return {x.q + 32 * begin,    x.scales + 8 * begin,
          x.sums + 24 * begin, x.q_sums == nullptr ? nullptr : x.q_sums + begin,
          x.chunks - begin,    x.stride};
}

// Groups `n` … `n + 16·G` against every row, in passes of kRows rows. From kUnpackFromRows rows
// nibbles are unpacked first, in spans of at most kSpanBlocks blocks that every pass meets
// before the next span is unpacked.
template <typename Block, int G, int kRows>
void GroupsRange(const Block* w, int64_t blocks, const Q8DotParams& p, int64_t n) {
  const Block* groups = w + (n / 16) * blocks;
  if constexpr (kOffsets<Block>) {
    if (p.m >= kUnpackFromRows) {
      for (int64_t r = 0; r < p.m; ++r) std::fill_n(p.out + r * p.out_stride + n, 16 * G, 0.0f);
      thread_local std::vector<UnpackedBlock> unpacked;
      const int64_t spans = (blocks + kSpanBlocks - 1) / kSpanBlocks;
      const int64_t len = (blocks + spans - 1) / spans;
      for (int64_t begin = 0; begin < blocks; begin += len) {
        const int64_t end = std::min(blocks, begin + len);
        Unpack(groups + begin, blocks, end - begin, G, unpacked);
        RowsRangeOf<UnpackedBlock, G, kRows>(unpacked.data(), end - begin, end - begin,
                                             FromBlock(p.x, begin), p, p.out + n);
      }
      return;
    }
  }
  RowsRangeOf<Block, G, kRows>(groups, blocks, blocks, p.x, p, p.out + n);
}

template <typename Block>
void RowsRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  const Block* w = static_cast<const Block*>(p.w);
  const int64_t blocks = p.x.chunks;
  int64_t n = n_begin;
  if (TwoGroups(p.m)) {
    for (; n + 32 <= n_end; n += 32) GroupsRange<Block, 2, 4>(w, blocks, p, n);
  }
  for (; n < n_end; n += 16) GroupsRange<Block, 1, 8>(w, blocks, p, n);
}

}  // namespace

void RepackedDotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ8x16) return RowsRange<Q8x16Block>(p, n_begin, n_end);
  if (p.w_type == WeightType::kQ5x16) return RowsRange<Q5x16Block>(p, n_begin, n_end);
  RowsRange<Q4x16Block>(p, n_begin, n_end);
}

void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  DotRange<Isa>(p, n_begin, n_end);
}

void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  q8k::KQuantRange<Isa>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avx512vnni
