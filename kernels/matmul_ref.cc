#include <algorithm>

#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/quant/quant_matmul.h"

namespace arbor::kernels {
namespace {

using simd::LoadScalar;
#ifdef ARBOR_CPU_AVX2
using simd::HorizontalSum;
using simd::Load8;
#endif

// MR rows of x against NR rows of w: MR·NR independent accumulators hide the FMA latency and
// each loaded weight vector is used MR times.
template <int MR, int NR, typename W>
void MicroKernel(const float* const* x, const W* const* w, int64_t k, float (&acc)[MR][NR]) {
  int64_t i = 0;
#ifdef ARBOR_CPU_AVX2
  __m256 sum[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) sum[r][c] = _mm256_setzero_ps();
  for (; i + 8 <= k; i += 8) {
    __m256 xv[MR];
    for (int r = 0; r < MR; ++r) xv[r] = _mm256_loadu_ps(x[r] + i);
    for (int c = 0; c < NR; ++c) {
      const __m256 wv = Load8(w[c] + i);
      for (int r = 0; r < MR; ++r) sum[r][c] = _mm256_fmadd_ps(xv[r], wv, sum[r][c]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = HorizontalSum(sum[r][c]);
#else
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = 0.0f;
#endif
  for (; i < k; ++i) {
    for (int c = 0; c < NR; ++c) {
      const float wv = LoadScalar(w[c] + i);
      for (int r = 0; r < MR; ++r) acc[r][c] += x[r][i] * wv;
    }
  }
}

// Rows of x per tile when there are enough. 4 × 4 tiles use each widened weight vector four times
// instead of twice, which cut the compute-bound batched decode and prefill steps of a 1B model by
// 10–30 % (docs/PERFORMANCE.md), but hold 21 vectors live: that fits AVX-512VL's 32 registers,
// while plain AVX2's 16 would spill, so those builds keep 2 × 4. Either way every output sums the
// same products in the same order.
#ifdef __AVX512VL__
constexpr int kRowTile = 4;
#else
constexpr int kRowTile = 2;
#endif

template <int MR, int NR, typename W>
void Tile(const MatmulParams& p, const W* w, int64_t m0, int64_t n0) {
  const float* xr[MR];
  const W* wr[NR];
  for (int r = 0; r < MR; ++r) xr[r] = p.x + (m0 + r) * p.x_stride;
  for (int c = 0; c < NR; ++c) wr[c] = w + (n0 + c) * p.k;
  float acc[MR][NR];
  MicroKernel<MR, NR>(xr, wr, p.k, acc);
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) p.out[(m0 + r) * p.out_stride + n0 + c] = acc[r][c];
}

template <int MR, typename W>
void RowTile(const MatmulParams& p, const W* w, int64_t m0, int64_t n_begin, int64_t n_end) {
  int64_t n = n_begin;
  for (; n + 4 <= n_end; n += 4) Tile<MR, 4>(p, w, m0, n);
  for (; n < n_end; ++n) Tile<MR, 1>(p, w, m0, n);
}

// Output features [n_begin, n_end): x is taken in blocks of rows and the weights in panels, both
// small enough to stay in cache while every pair of x rows of the block passes over the panel.
template <typename W>
void Range(const MatmulParams& p, int64_t n_begin, int64_t n_end) {
  const W* w = static_cast<const W*>(p.w);
  constexpr int64_t kPanelBytes = 64 * 1024;
  constexpr int64_t kRowBlock = 32;
  const int64_t panel =
      std::max<int64_t>(4, kPanelBytes / std::max<int64_t>(1, p.k * int64_t{sizeof(W)}) / 4 * 4);
  for (int64_t m_block = 0; m_block < p.m; m_block += kRowBlock) {
    const int64_t m_end = std::min(p.m, m_block + kRowBlock);
    for (int64_t n0 = n_begin; n0 < n_end; n0 += panel) {
      const int64_t n1 = std::min(n_end, n0 + panel);
      int64_t m = m_block;
      if constexpr (kRowTile == 4) {
        for (; m + 4 <= m_end; m += 4) RowTile<4>(p, w, m, n0, n1);
      }
      for (; m + 2 <= m_end; m += 2) RowTile<2>(p, w, m, n0, n1);
      if (m < m_end) RowTile<1>(p, w, m, n0, n1);
    }
  }
}

}  // namespace

void MatmulRef(const MatmulParams& p, ThreadPool* pool) {
  if (p.m == 0 || p.n == 0) return;
  if (IsQuantized(p.w_type)) return QuantMatmul(p, pool);
  auto run = [&](int64_t begin, int64_t end) {
    if (p.w_type == WeightType::kF32) {
      Range<float>(p, begin, end);
    } else {
      Range<uint16_t>(p, begin, end);
    }
  };
  // Each chunk should carry enough multiply-adds (~64k) to be worth a hand-off; multiples of 4
  // keep the 4-wide tiles whole.
  const int64_t grain = std::max<int64_t>(4, (65536 / std::max<int64_t>(1, p.m * p.k)) / 4 * 4);
  if (pool == nullptr) {
    run(0, p.n);
    return;
  }
  const int64_t groups = (p.n + 3) / 4;
  pool->ParallelFor(groups, std::max<int64_t>(1, grain / 4),
                    [&](int64_t begin, int64_t end) { run(begin * 4, std::min(p.n, end * 4)); });
}

void MatmulGroupRef(const MatmulParams& shared, std::span<const MatmulOutput> outputs,
                    ThreadPool* pool) {
  auto params_of = [&shared](const MatmulOutput& output) {
    MatmulParams p = shared;
    p.w = output.w;
    p.w_type = output.w_type;
    p.out = output.out;
    p.n = output.n;
    p.out_stride = output.out_stride;
    return p;
  };
  if (shared.m == 0 || outputs.empty()) return;
  auto path_of = [&](const MatmulOutput& output) {
    return IsQuantized(output.w_type) ? QuantPathOf(params_of(output)) : QuantPath{};
  };
  // One loop needs one quantized kernel path for every matrix; otherwise one matmul each.
  const QuantPath common = path_of(outputs.front());
  bool grouped = common.grouped();
  for (const MatmulOutput& output : outputs.subspan(1)) {
    grouped = grouped && path_of(output) == common;
  }
  if (!grouped) {
    for (const MatmulOutput& output : outputs) MatmulRef(params_of(output), pool);
  } else if (common.q8k) {
    QuantMatmulQ8KGroup(shared, outputs, pool);
  } else {
    QuantMatmulQ8Group(shared, outputs, *common.isa, pool);
  }
}

}  // namespace arbor::kernels
