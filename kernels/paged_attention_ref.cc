#include <algorithm>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "kernels/cpu_simd.h"
#include "kernels/paged_attention.h"
#include "kernels/thread_pool.h"

namespace arbor::kernels {
namespace {

// All query heads of one kv head for one query token, the K and V rows found once for the whole
// GQA group and each read once for up to four of its heads (simd::DotRows, simd::WeightedRowSum).
// T is the pools' element type (float, or uint16_t for bf16).
template <typename T>
void AttendGroup(const PagedAttentionParams& p, const T* k_pool, const T* v_pool, int64_t seq,
                 int64_t token, int64_t kv_head, std::vector<float>& scores,
                 std::vector<const T*>& k_rows, std::vector<const T*>& v_rows) {
  const PagedKvLayer& c = p.cache;
  const int64_t group = p.num_heads / c.num_kv_heads;
  const int64_t width = c.num_kv_heads * c.head_dim;
  const int64_t n_keys = PagedPosition(p.batch, seq, token) + 1;
  scores.resize(group * n_keys);
  const float* q0 = p.q + token * p.q_stride + kv_head * group * c.head_dim;
  k_rows.resize(n_keys);
  v_rows.resize(n_keys);
  for (int64_t j0 = 0; j0 < n_keys; j0 += c.block_size) {  // A block's rows are consecutive.
    const int64_t first = PagedSlot(p.batch, c.block_size, seq, j0) * width + kv_head * c.head_dim;
    const int64_t end = std::min(n_keys, j0 + c.block_size);
    for (int64_t j = j0; j < end; ++j) {
      k_rows[j] = k_pool + first + (j - j0) * width;
      v_rows[j] = v_pool + first + (j - j0) * width;
    }
  }
  simd::DotRows(q0, group, k_rows.data(), n_keys, c.head_dim, p.scale, scores.data(), n_keys);
  const bool last = token == p.batch.q_start[seq + 1] - 1;
  float* scores_out = (last && p.last_scores != nullptr) ? p.last_scores[seq] : nullptr;
  absl::InlinedVector<float, 8> inverse_sums(group);
  for (int64_t g = 0; g < group; ++g) {
    float* s = scores.data() + g * n_keys;
    if (scores_out != nullptr) {
      std::copy(s, s + n_keys, scores_out + (kv_head * group + g) * n_keys);
    }
    inverse_sums[g] = 1.0f / simd::ExpShifted(s, n_keys, simd::Max(s, n_keys));
  }
  simd::WeightedRowSum(scores.data(), n_keys, group, v_rows.data(), n_keys, c.head_dim,
                       inverse_sums.data(),
                       p.out + token * p.out_stride + kv_head * group * c.head_dim, c.head_dim);
}

template <typename T>
void Attend(const PagedAttentionParams& p, const T* k_pool, const T* v_pool, ThreadPool* pool) {
  const int64_t num_tokens = p.batch.q_start[p.batch.num_seqs];
  if (num_tokens == 0) return;
  const int64_t kv_heads = p.cache.num_kv_heads;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    std::vector<const T*> k_rows, v_rows;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t token = item / kv_heads;
      const int64_t seq = std::upper_bound(p.batch.q_start, p.batch.q_start + p.batch.num_seqs + 1,
                                           static_cast<int32_t>(token)) -
                          p.batch.q_start - 1;
      AttendGroup(p, k_pool, v_pool, seq, token, item % kv_heads, scores, k_rows, v_rows);
    }
  };
  if (pool == nullptr) {
    run(0, num_tokens * kv_heads);
  } else {
    pool->ParallelFor(num_tokens * kv_heads, 1, run);
  }
}

}  // namespace

void PagedAttentionRef(const PagedAttentionParams& p, ThreadPool* pool) {
  if (p.cache.bf16()) {
    Attend<uint16_t>(p, p.cache.k_bf16, p.cache.v_bf16, pool);
  } else {
    Attend<float>(p, p.cache.k, p.cache.v, pool);
  }
}

}  // namespace arbor::kernels
