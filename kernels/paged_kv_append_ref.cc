#include "kernels/paged_kv_append.h"

namespace arbor::kernels {

void PagedKvAppendRef(const PagedKvAppendParams& p) {
  const int64_t width = p.cache.num_kv_heads * p.cache.head_dim;
  for (int64_t s = 0; s < p.batch.num_seqs; ++s) {
    for (int64_t t = p.batch.q_start[s]; t < p.batch.q_start[s + 1]; ++t) {
      const int64_t slot = PagedSlot(p.batch, p.cache.block_size, s, PagedPosition(p.batch, s, t));
      const float* k = p.k + t * p.k_stride;
      const float* v = p.v + t * p.v_stride;
      float* k_dst = p.cache.k + slot * width;
      float* v_dst = p.cache.v + slot * width;
      for (int64_t i = 0; i < width; ++i) {
        k_dst[i] = k[i];
        v_dst[i] = v[i];
      }
    }
  }
}

}  // namespace arbor::kernels
