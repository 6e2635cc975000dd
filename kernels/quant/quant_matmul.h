// The matmul of matmul.h on GGUF block-quantized weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K) kept in their blocks: out[m, n] = Σ_k x[m, k] · w[n, k] with w[n] a row of whole
// blocks, so a decode step streams 4.5 to 8.5 bits per weight instead of 32. Two ways, chosen by
// p.activation_quant:
//
// kF32, the exact mode: every 32-weight chunk (quant_chunks.h) is widened in registers — w_j =
// s·q_j + o — and multiplied with the fp32 activations: the result is the fp32 matmul of the
// exactly dequantized weights, to fp32 rounding. A chunk contributes s·Σ q_j·x_j + o·Σ x_j, with
// Σ x_j per 16 weights computed once per call, and each widened chunk serves up to eight rows.
//
// kQ8, as llama.cpp computes: each activation row is quantized once per call to 8 bits per 32
// values (q8_activations.h) and each chunk contributes s·d_x·Σ q_w·q_x + o·d_x·Σ q_x with the
// integer sums on AVX2 (maddubs/madd), AVX-VNNI or AVX-512 VNNI (vpdpbusd), picked at run time
// from the CPU (quant_dot.h), or AMX tiles from kAmxMinRows rows. About three times fewer
// instructions per weight than kF32; the result is the float64 product of the dequantized weights
// and the quantized activations (quant_matmul_twin.h) to fp32 rounding, i.e. it carries the
// activations' 8-bit rounding. Q4_K and Q6_K matrices quantize the activations per 256 values
// instead where that is faster (TakesQ8K, QuantMatmulQ8K). A CPU without AVX2 computes kQ8 requests
// in kF32.
#ifndef ARBOR_KERNELS_QUANT_QUANT_MATMUL_H_
#define ARBOR_KERNELS_QUANT_QUANT_MATMUL_H_

#include <optional>
#include <span>
#include <string>

#include "kernels/matmul.h"

namespace arbor::kernels {

// `p.w_type` must be quantized and `p.k` a whole number of its blocks; `pool` may be null.
void QuantMatmul(const MatmulParams& p, ThreadPool* pool);

// The instruction sets of the kQ8 kernels, slowest first (AMX: for many rows).
enum class Q8Isa { kAvx2, kAvxVnni, kAvx512Vnni, kAmx };
const char* Q8IsaName(Q8Isa isa);
// Whether this CPU (and OS) runs `isa`'s kernels.
bool CpuRunsQ8Isa(Q8Isa isa);
// The fastest of them this CPU runs; none without AVX2.
std::optional<Q8Isa> BestQ8Isa();
// The one QuantMatmul uses for `rows` rows of activations. Batch-invariant: BestQ8Isa at every
// row count, AMX excepted (its tiles sum a row's chunks in another order than the vector
// kernels, so a row would round differently from 12 rows on). Otherwise the fastest for `rows`:
// AMX's tiles of 16 rows serve only kAmxMinRows rows and up (a tile costs the same at 8 rows as
// at 16, where AVX-512 costs half: measured level at 8 rows, AMX 1.4–2.0× faster at 16; below,
// AVX-512), and below four rows a 256-bit kernel (on a Xeon with AMX, the 512-bit kernel's
// gathering of two chunks per vector was 15–20 % slower at one row; on an EPYC it is faster).
inline constexpr int64_t kAmxMinRows = 12;
std::optional<Q8Isa> Q8IsaForRows(int64_t rows, bool batch_invariant = true);
// Whether the K-quant repacked rows (kQ4Kx8, kQ5Kx8, kQ6Kx8) multiply `rows` rows on AMX tiles:
// from kAmxKQuantMinRows rows on a CPU that has them, in either numerics. Tiles keep invariance
// here because the tile kernel gives the vector kernels' bits (repacked_kquant_amx.cc): only the
// speed depends on the row count. The per-32 repacked rows stay on vectors: their float work per
// 32 weights bounds them, and tiles that gave the same bits ran no faster end to end
// (docs/PERFORMANCE.md).
inline constexpr int64_t kAmxKQuantMinRows = 32;
bool KQuantTilesForRows(int64_t rows);
// Which kernels QuantMatmul picks by row count, for start-up reports: e.g. "repacked rows:
// avx512-vnni at every row count, K-quants on amx with the same bits from 32 rows; per-256
// activations for Q4_K and Q6_K" (batch-invariant), or with --numerics=fast the file blocks'
// choice after the repacked rows' ("file blocks: avx-vnni below 4 rows, avx512-vnni below 12
// rows, amx from there; Q4_K and Q6_K: per-256 activations below 12 rows").
std::string Q8KernelsSummary(bool batch_invariant = true);

// QuantMatmul in kQ8 whatever p.activation_quant says, on `isa` (which the CPU must run): how
// tests reach every instruction set the machine has.
void QuantMatmulQ8(const MatmulParams& p, Q8Isa isa, ThreadPool* pool);

// kQ8 for Q4_K and Q6_K weights with the activations quantized per 256 values
// (q8k_activations.h), so that a super-block's chunk products sum in integers with their
// sub-block scales (docs/PERFORMANCE.md has the rates): on AVX2 one chunk per vector for up to
// kQ8KMaxRows rows at a time, on AVX-512 two chunks per vector for 8 rows at a time. QuantMatmul
// routes a K-quant matmul here (TakesQ8K) at every row count when p.batch_invariant (a row's
// activations are then quantized alike whatever its batch, and one form serves every group:
// AVX-512's where the 8-bit kernels may use it); otherwise at up to kQ8KMaxRows rows (AVX2's
// form), and at any row count below AMX's (kAmxMinRows) where they may use AVX-512: there this
// beats the per-32 kernels at every row count measured. Needs AVX2 (CpuRunsQ8Isa(kAvx2)); any m.
inline constexpr int64_t kQ8KMaxRows = 3;
bool TakesQ8K(const MatmulParams& p);
void QuantMatmulQ8K(const MatmulParams& p, ThreadPool* pool);

// MatmulGroupRef's quantized paths: QuantMatmulQ8 (on `isa`) or QuantMatmulQ8K for every output,
// which must all take that path, with the activations quantized once.
void QuantMatmulQ8Group(const MatmulParams& shared, std::span<const MatmulOutput> outputs,
                        Q8Isa isa, ThreadPool* pool);
void QuantMatmulQ8KGroup(const MatmulParams& shared, std::span<const MatmulOutput> outputs,
                         ThreadPool* pool);
// Activation rows QuantMatmulQ8KGroup multiplies at a time, of m rows of k values: about 512 KiB
// of their bytes, so that a block stays in a core's L2 cache while every weight row passes over
// it (AMX's tiles read a 2,048-token prefill's 4–16 MB of activations from L3 again for each
// sixteen weight rows otherwise); at least 64 rows (each block unpacks the weights again), a
// multiple of 16, the blocks near equal. A row's sums run over k alone, so blocks change no
// result. (The per-32 vector kernels gained nothing measurable from it.)
int64_t Q8KRowBlock(int64_t m, int64_t k);
// The kernel path QuantMatmul takes for `p`, for grouping: Q8 on an instruction set, Q8K, or
// neither (the exact fp32 mode, or no AVX2). A repacked matrix always takes its kernel, whatever
// p.activation_quant says: it is made only where one runs (repacked_rows.h) — kQ4x16, kQ5x16 and
// kQ8x16 on the Q8 path (on Q8IsaForRows's batch-invariant choice), kQ4Kx8, kQ5Kx8 and kQ6Kx8 on
// the Q8K one.
struct QuantPath {
  bool q8k = false;
  std::optional<Q8Isa> isa;  // Set for the per-32 (Q8) path.
  bool grouped() const { return q8k || isa.has_value(); }
  bool operator==(const QuantPath&) const = default;
};
QuantPath QuantPathOf(const MatmulParams& p);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_QUANT_MATMUL_H_
