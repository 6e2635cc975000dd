// The batch-invariant GEMM on CUDA: out[i, n] = Σ_k x[i, k] · w[n, k] with fp32 activations
// narrowed to bf16 as they are loaded (no staging launch), bf16 weights — or a GGUF block type's
// rows, widened to bf16 in registers — and fp32 accumulation on the tensor cores, for any number
// of rows: one kernel from a single decode row to a 512-token prefill, so that a row's result
// never depends on how many rows share its launch, where it sits among them, or how its prompt
// was chunked (--numerics=invariant; cuBLASLt and the GEMV are the fast path's for bf16 weights;
// block types have only this kernel on the GPU).
//
// Why it is invariant: each output element is reduced in one order fixed by k alone. The k axis
// is cut into 32-wide chunks (the last one zero-padded when k is not a multiple of 32); chunk c
// belongs to warp c mod kInvariantGemmKWarps of the CTA, which adds its chunks in increasing
// order with mma.sync (two m16n8k16 steps per chunk, the weight rows on the 16-row side and the
// activation rows on the 8-column side); the warps' partial sums meet in shared memory in warp
// order. How many rows and weight rows a CTA tiles changes with m (few rows spread over more
// CTAs, many rows reuse each weight fragment), but never which products an accumulator receives
// or in which order. Rows past m and weight rows past n are computed on zeros or a repeated row
// and never written.
//
// Each lane loads 8 consecutive k of a weight row per chunk (16 bytes of bf16, or the block
// bytes that hold them: a GGUF block is whole 32-weight chunks, quant_chunks.h) and the 8
// matching k of an activation row (32 bytes of fp32), and feeds them to the two mma steps as a
// fixed permutation of the chunk's k — the same permutation on both operands, so the dot product is
// unchanged.
#ifndef ARBOR_KERNELS_INVARIANT_GEMM_CUDA_H_
#define ARBOR_KERNELS_INVARIANT_GEMM_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/weight_type.h"

namespace arbor::kernels {

// k per chunk: a lane reads 8 consecutive k of it, so row lengths must be multiples of 8.
inline constexpr int64_t kInvariantGemmChunk = 32;
// Warps that split a CTA's k axis; part of the numerics (changing it changes every result).
inline constexpr int kInvariantGemmKWarps = 4;

struct InvariantGemmParams {
  const float* x = nullptr;       // Row i at x + (rows ? rows[i] : i)·x_stride, k floats.
  const int32_t* rows = nullptr;  // Optional [m] device row indices into x (the logits' gather).
  const void* w = nullptr;        // [n, k] row-major: bf16 bit patterns, or rows of w_type blocks.
  float* out = nullptr;           // [m, n] fp32, row i at out + i·out_stride.
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t x_stride = 0;
  int64_t out_stride = 0;
  WeightType w_type = WeightType::kBF16;
};

// Whether the kernel reads weights of `type`: bf16 and GGUF's block types as the file has them
// (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), not fp32 or the CPU's repacked layouts.
bool InvariantGemmTakes(WeightType type);

// Whether LaunchInvariantGemm takes these params: a type it reads, m, n ≥ 1, k a positive
// multiple of 8 for bf16 (as the GEMV's) or of the block for a block type, x 16-byte aligned (w
// too for bf16, 2-byte for blocks), x_stride a multiple of 4 and ≥ k, out_stride ≥ n.
bool InvariantGemmServes(const InvariantGemmParams& params);

// Device pointers; asynchronous on `stream`. cudaErrorInvalidValue when !InvariantGemmServes.
cudaError_t LaunchInvariantGemm(const InvariantGemmParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_INVARIANT_GEMM_CUDA_H_
