// The batch-invariant GEMM on CUDA: out[i, n] = Σ_k x[i, k] · w[n, k] with bf16 activations and
// weights, fp32 accumulation on the tensor cores, for any number of rows — one kernel from a
// single decode row to a 512-token prefill, so that a row's result never depends on how many rows
// share its launch, where it sits among them, or how its prompt was chunked
// (--numerics=invariant; cuBLASLt and the GEMV are the fast path's).
//
// Why it is invariant: each output element is reduced in one order fixed by k alone. The k axis
// is cut into 32-wide chunks (the last one zero-padded when k is not a multiple of 32); chunk c
// belongs to warp c mod kInvariantGemmKWarps of the CTA, which
// adds its chunks in increasing order with mma.sync (two m16n8k16 steps per chunk, the weight rows
// on the 16-row side and the activation rows on the 8-column side); the warps' partial sums meet
// in shared memory in warp order. How many rows and weight rows a CTA tiles changes with m (few
// rows spread over more CTAs, many rows reuse each weight fragment), but never which products an
// accumulator receives or in which order. Rows past m and weight rows past n are computed on
// zeros or a repeated row and never written.
//
// Each lane loads 16 bytes of a weight row per chunk (8 consecutive k) and the 8 matching k of
// an activation row, and feeds them to the two mma steps as a fixed permutation of the chunk's
// k — the same permutation on both operands, so the dot product is unchanged.
#ifndef ARBOR_KERNELS_INVARIANT_GEMM_CUDA_H_
#define ARBOR_KERNELS_INVARIANT_GEMM_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace arbor::kernels {

// k per chunk: a lane reads 8 consecutive k of it, so row lengths must be multiples of 8.
inline constexpr int64_t kInvariantGemmChunk = 32;
// Warps that split a CTA's k axis; part of the numerics (changing it changes every result).
inline constexpr int kInvariantGemmKWarps = 4;

struct InvariantGemmParams {
  const uint16_t* x = nullptr;  // [m, k] bf16 bit patterns, row i at x + i·x_stride.
  const uint16_t* w = nullptr;  // [n, k] row-major bf16 bit patterns.
  float* out = nullptr;         // [m, n] fp32, row i at out + i·out_stride.
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t x_stride = 0;
  int64_t out_stride = 0;
};

// Whether LaunchInvariantGemmBf16 takes these params: m, n ≥ 1, k a positive multiple of 8 (as
// the GEMV's), x and w 16-byte aligned, x_stride a multiple of 8 and ≥ k, out_stride ≥ n.
bool InvariantGemmServes(const InvariantGemmParams& params);

// Device pointers; asynchronous on `stream`. cudaErrorInvalidValue when !InvariantGemmServes.
cudaError_t LaunchInvariantGemmBf16(const InvariantGemmParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_INVARIANT_GEMM_CUDA_H_
