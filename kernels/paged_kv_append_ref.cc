#include "base/bf16.h"
#include "kernels/paged_kv_append.h"

namespace arbor::kernels {
namespace {

void Store(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

void Store(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = base::FloatToBf16(src[i]);  // Nearest, ties even.
}

template <typename T>
void Append(const PagedKvAppendParams& p, T* k_pool, T* v_pool) {
  const int64_t width = p.cache.num_kv_heads * p.cache.head_dim;
  for (int64_t s = 0; s < p.batch.num_seqs; ++s) {
    for (int64_t t = p.batch.q_start[s]; t < p.batch.q_start[s + 1]; ++t) {
      const int64_t slot = PagedSlot(p.batch, p.cache.block_size, s, PagedPosition(p.batch, s, t));
      Store(k_pool + slot * width, p.k + t * p.k_stride, width);
      Store(v_pool + slot * width, p.v + t * p.v_stride, width);
    }
  }
}

}  // namespace

void PagedKvAppendRef(const PagedKvAppendParams& p) {
  if (p.cache.bf16()) {
    Append(p, p.cache.k_bf16, p.cache.v_bf16);
  } else {
    Append(p, p.cache.k, p.cache.v);
  }
}

}  // namespace arbor::kernels
