// Matrix-vector products for few rows on CUDA: out[i, n] = Σ_k x[i, k] · w[n, k] with bf16
// weights and fp32 activations, for 1 to kGemvMaxRows rows — the decode shapes, where a GEMM
// library tiles for many rows and leaves most of the memory bandwidth idle. Same contract as
// MatmulRef (matmul.h) and LogitsRef (logits.h) for bf16 weights: the activations stay fp32 (no
// narrowing launch, and no bf16 rounding of x), products and sums in fp32.
//
// Two neighbours of a decode step's projections fold in, so that neither needs a launch of its
// own: the RMSNorm before a projection (x rows normalised on the fly: each warp reads whole rows
// anyway, so it sums their squares as it goes) and the residual add after one (out += x·wᵀ).
//
// Each warp streams whole weight rows in 16-byte loads (several in flight per lane) and keeps
// one accumulator per (weight row, x row); lanes are summed by one shuffle tree at the end. The
// reduction order of an output element depends only on k, never on how many x rows share the
// launch or where a row sits among them: a row's result is bit-identical at m = 1 and m = 8.
#ifndef ARBOR_KERNELS_GEMV_CUDA_H_
#define ARBOR_KERNELS_GEMV_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace arbor::kernels {

inline constexpr int64_t kGemvMaxRows = 8;
// Where callers stop choosing the GEMV over cuBLASLt by default: measured on an H100 on the
// Llama-3.2-1B shape, the GEMV is 1.12–1.73× faster at 1–4 rows but 0.61–1.03× at 8
// (docs/PERFORMANCE.md).
inline constexpr int64_t kGemvDefaultRows = 4;

struct GemvParams {
  const float* x = nullptr;       // Row i at x + (rows ? rows[i] : i)·x_stride, k floats.
  const int32_t* rows = nullptr;  // Optional [m] device row indices into x (the logits' gather).
  const uint16_t* w = nullptr;    // [n, k] row-major bf16 bit patterns.
  float* out = nullptr;           // [m, n], row i at out + i·out_stride. Must not alias x.
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t x_stride = 0;
  int64_t out_stride = 0;
  // Optional [k]: x rows are RMS-normalised first, x̂ = x · g / √(mean(x²) + norm_eps) — the
  // RMSNorm of rms_norm.h fused in (its output never stored).
  const float* norm_weight = nullptr;
  float norm_eps = 0.0f;
  bool accumulate = false;  // out += x·wᵀ (a residual add fused in) instead of out = x·wᵀ.
};

// Whether LaunchGemvBf16 takes these params: 1 ≤ m ≤ kGemvMaxRows, k a multiple of 8, w and x
// 16-byte aligned (x_stride a multiple of 4). Callers fall back to a GEMM otherwise.
bool GemvServes(const GemvParams& params);

// Device pointers; asynchronous on `stream`. cudaErrorInvalidValue when !GemvServes(params).
cudaError_t LaunchGemvBf16(const GemvParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_GEMV_CUDA_H_
