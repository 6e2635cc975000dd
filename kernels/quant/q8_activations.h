// Activation rows quantized to 8 bits for the integer-dot quantized matmul (quant_dot.h): per
// 32 values a scale d = max|x| / 127 and q = round(x / d) in [−127, 127], as llama.cpp's Q8_0
// does, but with the scale kept in fp32 (it is only held for one call, so nothing is gained by
// rounding it to half) and the sums d·Σq a weight type's offset multiplies precomputed.
//
// One scale per 32 values for every weight type, rather than llama.cpp's one per 256 (Q8_K): a
// finer activation scale gives a smaller error where the activations vary within 256 values
// (outlier channels). The price shows at few rows, where converting and scaling each chunk's
// integer sum bounds the K-quant kernels: there Q4_K and Q6_K take the per-256 format of
// q8k_activations.h instead (QuantMatmul decides).
//
// The layout is plain pointers, with no containers and no inline code, because it is read by the
// per-instruction-set translation units (see quant_chunk_bytes.h).
#ifndef ARBOR_KERNELS_QUANT_Q8_ACTIVATIONS_H_
#define ARBOR_KERNELS_QUANT_Q8_ACTIVATIONS_H_

#include <cstdint>

namespace arbor::kernels {

// m rows of k = 32·chunks values. Rows are `stride` chunks apart (chunks rounded up to even, the
// padding zeros) so a kernel reading two chunks per vector can run one past an odd end.
struct Q8Rows {
  int8_t* q = nullptr;      // [m, 32·stride]: the integers.
  float* scales = nullptr;  // [m, 8·stride]: each chunk's d, eight times (one AVX2 vector).
  // d·Σq over each 16-value half of each chunk and over the whole chunk (part 0, 1, 2), for the
  // weights' offsets, stored across rows: at SumIndex, [m / 8 rounded up, stride, 3 parts,
  // 8 rows], so that one vector holds the sums of the eight rows a kernel pass serves (rows past
  // m are zeros).
  float* sums = nullptr;
  // [m, stride] or null: Σq over each whole chunk, for the repacked 8-bit weights (q + 128),
  // whose offset −128·Σq is taken in integers.
  int32_t* q_sums = nullptr;
  int64_t chunks = 0;  // k / 32.
  int64_t stride = 0;  // Chunks between rows.
};

// Where row `row`'s sum over part `part` (0, 1: a half; 2: the whole) of chunk `chunk` lies in
// Q8Rows::sums; the sums of rows 8g..8g+7 are consecutive.
constexpr int64_t SumIndex(int64_t row, int64_t chunk, int part, int64_t stride) {
  return (((row / 8) * stride + chunk) * 3 + part) * 8 + row % 8;
}
// Floats Q8Rows::sums holds for m rows.
constexpr int64_t SumsSize(int64_t m, int64_t stride) { return (m + 7) / 8 * stride * 3 * 8; }

// The 8-bit step of n values: max|x| / 127 (0 when all are zero). Also the per-256 format's
// (q8k_activations.h).
float Q8Step(const float* x, int64_t n);

// Quantizes row `row` of `out` from the k = 32·out.chunks floats at x (scalar; the definition the
// vector quantizers must reproduce bit for bit, and what the float64 twin uses).
void QuantizeQ8RowRef(const float* x, int64_t row, const Q8Rows& out);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_Q8_ACTIVATIONS_H_
