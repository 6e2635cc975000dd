// Activation rows quantized per 256 values, as llama.cpp's Q8_K, for Q4_K and Q6_K matrices
// (QuantMatmulQ8K, quant_matmul.h): per 256-value super-block one scale d = max|x| / 127 and
// q = round(x / d) in [−127, 127], plus Σq per 16 values, as integers and as d·Σq in float (for
// the weights' offsets: Q4_K's minimums per 32 values, Q6_K's zero point under a scale per 16;
// a kernel serving few rows takes the integers, one serving many the floats, which spare it a
// conversion per row).
//
// Why beside the per-32 format of q8_activations.h: with one activation scale per super-block, a
// kernel sums the eight chunk products of a super-block in integers, each times its 6-bit weight
// scale, and converts to float once, where per-32 scales make it convert and scale every chunk.
// At few rows that per-chunk work is what bounds a Q4_K or Q6_K matmul (docs/PERFORMANCE.md).
// The price is a coarser rounding where the activations vary within 256 values, so QuantMatmul
// takes this format only where it pays: those weights, below the row count AMX tiles take over
// (TakesQ8K).
#ifndef ARBOR_KERNELS_QUANT_Q8K_ACTIVATIONS_H_
#define ARBOR_KERNELS_QUANT_Q8K_ACTIVATIONS_H_

#include <cstdint>

namespace arbor::kernels {

// One row of k = 256·blocks values.
struct Q8KRow {
  int8_t* q = nullptr;           // [256·blocks]: the integers.
  float* d = nullptr;            // [blocks]: each super-block's scale.
  int16_t* sums = nullptr;       // [16·blocks]: Σq over each 16 values.
  float* scaled_sums = nullptr;  // [16·blocks]: d·Σq over each 16 values.
  // [256·blocks] or null: q + 128 as unsigned bytes, each 32 in the order of the repacked Q6_K
  // weights (repacked_rows.h's Q6Kx8Block): four of the first 16, four of the second, and so on.
  uint8_t* biased_pairs = nullptr;
  int64_t blocks = 0;
};

// Quantizes the 256·out.blocks floats at x into `out` (scalar: it is ~1/n of a matmul's work).
void QuantizeQ8KRow(const float* x, const Q8KRow& out);
// Writes out.biased_pairs from out.q.
void PairBiasedQ8KRow(const Q8KRow& out);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_Q8K_ACTIVATIONS_H_
