// Dense matmul of the Llama projections: out[m, n] = Σ_k x[m, k] · w[n, k] — fp32 activations
// times fp32 or bf16 weights stored as PyTorch stores them ([out_features, in_features],
// row-major), accumulated in fp32. On the CPU this is where nearly all time goes (decode is a
// GEMV streaming every weight once), so the CPU implementation is vectorised (AVX2/FMA when
// compiled for it) and spreads output features over a ThreadPool.
//
// Framework-free: the CUDA backend takes the same params struct (with cuBLAS underneath).
#ifndef ARBOR_KERNELS_MATMUL_H_
#define ARBOR_KERNELS_MATMUL_H_

#include <cstdint>
#include <span>

#include "kernels/weight_type.h"

namespace arbor::kernels {

class ThreadPool;

// How the CPU multiplies block-quantized weights (quant_matmul.h); other weight types ignore it.
enum class ActivationQuant : int32_t {
  kF32 = 0,  // Each weight chunk widened to fp32 against fp32 activations: exact to fp32 rounding.
  kQ8 = 1,   // Activations quantized to 8 bits per 32 values, integer dot products (as llama.cpp).
};

struct MatmulParams {
  const float* x = nullptr;  // [m, k], row i at x + i * x_stride.
  const void* w = nullptr;   // [n, k] row-major and contiguous, element type `w_type`.
  WeightType w_type = WeightType::kF32;
  float* out = nullptr;  // [m, n], row i at out + i * out_stride. Must not alias x.
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t x_stride = 0;    // >= k
  int64_t out_stride = 0;  // >= n
  ActivationQuant activation_quant = ActivationQuant::kF32;
  // Each row's result independent of the other rows (of m and of the row's place among them):
  // one kernel and one summation order at every row count. Off: the kernel fastest for m (8-bit
  // kernels: 256-bit ones below 4 rows, AMX tiles from 12 on CPUs that have them, Q4_K/Q6_K per-32
  // activations there), whose rounding then depends on what the row is batched with.
  bool batch_invariant = true;
};

// CPU implementation; `pool` may be null (single-threaded). Summation order differs from a
// naive loop (8 lanes, then a tree), so results match float64 within fp32 rounding only.
// Quantized weight types go to QuantMatmul (quant_matmul.h).
void MatmulRef(const MatmulParams& params, ThreadPool* pool);

// One of several projections of the same activations (MatmulGroupRef).
struct MatmulOutput {
  const void* w = nullptr;  // [n, k], as MatmulParams::w.
  WeightType w_type = WeightType::kF32;
  float* out = nullptr;  // [m, n], as MatmulParams::out.
  int64_t n = 0;
  int64_t out_stride = 0;
};

// Every output's matmul with `shared`'s activations (x, m, k, x_stride and the two modes; its
// w, w_type, out, n and out_stride are ignored), bit for bit as MatmulRef computes each, in one
// parallel loop over all their output features: Q, K and V, or gate and up, quantize the
// activations once instead of once per matrix, and narrow matrices (K and V) no longer split
// unevenly over the threads on their own. Outputs whose matrices take different kernels are
// computed one after another.
void MatmulGroupRef(const MatmulParams& shared, std::span<const MatmulOutput> outputs,
                    ThreadPool* pool);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_MATMUL_H_
