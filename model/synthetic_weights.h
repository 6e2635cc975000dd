// Random Llama weights whose next-token distributions span the whole entropix plane, from
// near-certain (entropy and varentropy ≈ 0) through a dominant token over a long tail (low
// entropy, high varentropy) and a few tokens over a tail (high both) to near-uniform (high
// entropy, low varentropy).
//
// How: a small "signal" subspace S of the hidden state (the first kSignalDims dimensions)
// carries the logits of a few strong tokens whose lm_head rows are long and lie in S; every
// other token's row is short and lies outside S, so the weak tokens form a nearly flat tail.
// Token embeddings put a log-uniformly spread amount of their mass in S, so the share of the
// final normalised hidden state in S — hence how far the strong tokens stand above the tail —
// varies over two orders of magnitude from one context to the next. Strong tokens' own
// embeddings carry little S mass, so a confident step tends to be followed by an uncertain one
// and a generation wanders across the plane instead of locking into repetition. The transformer
// layers are random with small output projections so that context still moves the state;
// Qwen2's q/k/v biases are random too.
#ifndef ARBOR_MODEL_SYNTHETIC_WEIGHTS_H_
#define ARBOR_MODEL_SYNTHETIC_WEIGHTS_H_

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/safetensors_writer.h"

namespace arbor::model {

inline constexpr int kSignalDims = 4;

// Fills `out` (rows × spec's last dimension, float32) with rows [row_begin, row_begin + rows) of
// tensor `spec` of a model with `config`, seeded by `seed` and scaled by `gain` where the spec
// is the final norm. Rows are independent, so a tensor can be produced in any chunking.
void SyntheticRows(const ModelConfig& config, const TensorSpec& spec, uint64_t seed, float gain,
                   int64_t row_begin, int64_t rows, std::vector<float>* out);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_SYNTHETIC_WEIGHTS_H_
