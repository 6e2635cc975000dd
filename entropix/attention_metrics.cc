#include "entropix/attention_metrics.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/vector_math.h"

namespace arbor::entropix {
namespace {

// Slots the means divide by: the visible keys, or the reference buffer (never smaller than them).
int64_t SlotCount(int64_t keys, AttentionMode mode, int reference_len) {
  return mode == AttentionMode::kReference ? std::max<int64_t>(reference_len, keys) : keys;
}

// The head's moments over all its slots: REFERENCE adds the empty slots, each scoring 0.
base::SoftmaxMoments SlotMoments(const AttentionHeadState& head, AttentionMode mode,
                                 int reference_len) {
  base::SoftmaxMoments moments = head.moments;
  moments.AddConstant(0.0,
                      static_cast<double>(SlotCount(head.count, mode, reference_len) - head.count));
  return moments;
}

}  // namespace

void AttentionHeadState::AddScores(const float* scores, int64_t n) {
  moments.AddChunk(scores, n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += std::abs(scores[i]);
  abs_sum += total;
  count += n;
}

void AttentionHeadState::Merge(const AttentionHeadState& other) {
  moments.Merge(other.moments);
  abs_sum += other.abs_sum;
  count += other.count;
}

double HeadLogNormalizer(const AttentionHeadState& head, AttentionMode mode, int reference_len) {
  return SlotMoments(head, mode, reference_len).LogSumExp();
}

absl::StatusOr<AttentionMetrics> CombineAttentionMetrics(absl::Span<const AttentionHeadState> heads,
                                                         double agreement_visible_sum,
                                                         AttentionMode mode, int reference_len) {
  if (heads.empty()) return absl::InvalidArgumentError("attention: no heads");
  if (reference_len < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("reference_len: ", reference_len, " is outside [1, 1048576]"));
  }
  const int64_t keys = heads[0].count;
  for (size_t h = 0; h < heads.size(); ++h) {
    if (heads[h].count != keys || keys < 1) {
      return absl::InvalidArgumentError(absl::StrCat("attention: head ", h, " has ", heads[h].count,
                                                     " keys, head 0 has ", keys,
                                                     "; every head needs the same number >= 1"));
    }
  }
  const double num_heads = static_cast<double>(heads.size());
  const int64_t slots = SlotCount(keys, mode, reference_len);
  std::vector<double> entropy(heads.size());
  std::vector<double> empty_slot_prob(heads.size());
  double entropy_sum = 0.0, head_varentropy_sum = 0.0, abs_sum = 0.0;
  for (size_t h = 0; h < heads.size(); ++h) {
    const base::SoftmaxMoments moments = SlotMoments(heads[h], mode, reference_len);
    entropy[h] = moments.EntropyNats() / base::kLn2;
    entropy_sum += entropy[h];
    head_varentropy_sum += moments.VarentropyNats() / (base::kLn2 * base::kLn2);
    abs_sum += heads[h].abs_sum;
    empty_slot_prob[h] = std::exp(-moments.LogSumExp());  // A of a slot scoring 0.
  }
  const double mean_entropy = entropy_sum / num_heads;
  double variance = 0.0;
  for (double e : entropy) variance += (e - mean_entropy) * (e - mean_entropy);
  variance /= num_heads;

  // Every empty slot has the same per-head probabilities, so their agreement share is one
  // column's deviation times the number of empty slots.
  double agreement_sum = agreement_visible_sum;
  if (slots > keys) {
    double mean_prob = 0.0;
    for (double a : empty_slot_prob) mean_prob += a / num_heads;
    double column = 0.0;
    for (double a : empty_slot_prob) column += std::abs(a - mean_prob);
    agreement_sum += column * static_cast<double>(slots - keys);
  }
  const double cells = num_heads * static_cast<double>(slots);
  AttentionMetrics metrics;
  metrics.attn_entropy = static_cast<float>(mean_entropy);
  metrics.attn_varentropy = static_cast<float>(variance);
  metrics.attn_head_varentropy = static_cast<float>(head_varentropy_sum / num_heads);
  metrics.agreement = static_cast<float>(agreement_sum / cells);
  metrics.interaction_strength = static_cast<float>(abs_sum / cells);
  return metrics;
}

absl::StatusOr<AttentionMetrics> ComputeAttentionMetrics(const float* scores, int heads, int keys,
                                                         int64_t row_stride, AttentionMode mode,
                                                         int reference_len) {
  if (heads < 1 || keys < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention: heads (", heads, ") and keys (", keys, ") must be >= 1"));
  }
  if (row_stride < keys) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention: row_stride ", row_stride, " is smaller than keys ", keys));
  }
  std::vector<AttentionHeadState> states(heads);
  for (int h = 0; h < heads; ++h) {
    const float* row = scores + h * row_stride;
    // ±inf is rejected too: a masked key is simply not passed, and |s| must stay finite.
    for (int k = 0; k < keys; ++k) {
      if (!std::isfinite(row[k])) {
        return absl::InvalidArgumentError(absl::StrCat("attention scores[", h, "][", k, "] is ",
                                                       row[k], "; scores must be finite"));
      }
    }
    states[h].AddScores(row, keys);
  }
  // Agreement: probabilities row by row, then the per-key mean over heads, then the deviations;
  // row-wise passes keep the loops contiguous.
  std::vector<float> probs(static_cast<size_t>(heads) * keys);
  std::vector<double> mean(keys, 0.0);
  for (int h = 0; h < heads; ++h) {
    const float* row = scores + h * row_stride;
    float* out = probs.data() + static_cast<size_t>(h) * keys;
    const float log_norm = static_cast<float>(HeadLogNormalizer(states[h], mode, reference_len));
    base::vector_math::ExpShifted(row, log_norm, out, keys);
    for (int k = 0; k < keys; ++k) mean[k] += out[k];
  }
  for (double& m : mean) m /= heads;
  double deviation = 0.0;
  for (int h = 0; h < heads; ++h) {
    const float* row = probs.data() + static_cast<size_t>(h) * keys;
    for (int k = 0; k < keys; ++k) deviation += std::abs(row[k] - mean[k]);
  }
  return CombineAttentionMetrics(states, deviation, mode, reference_len);
}

}  // namespace arbor::entropix
