#include "kernels/paged_kv_append_cuda.h"
#include "kernels/paged_kv_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 128;

// One block per step token: find its sequence and slot once, then copy its K and V rows into
// the pools (T: float, or uint16_t for bf16).
template <typename T>
__global__ void PagedKvAppendKernel(PagedKvAppendParams p, T* k_pool, T* v_pool) {
  const int64_t t = blockIdx.x;
  const int64_t seq = DeviceSeqOfToken(p.batch, t);
  const int64_t slot =
      DevicePagedSlot(p.batch, p.cache.block_size, seq, DevicePagedPosition(p.batch, seq, t));
  const int64_t width = p.cache.num_kv_heads * p.cache.head_dim;
  for (int64_t i = threadIdx.x; i < width; i += kThreads) {
    KvStore(k_pool + slot * width + i, p.k[t * p.k_stride + i]);
    KvStore(v_pool + slot * width + i, p.v[t * p.v_stride + i]);
  }
}

}  // namespace

cudaError_t LaunchPagedKvAppend(const PagedKvAppendParams& p, int64_t num_tokens,
                                cudaStream_t stream) {
  if (num_tokens == 0) return cudaSuccess;
  if (p.cache.bf16()) {
    PagedKvAppendKernel<<<num_tokens, kThreads, 0, stream>>>(p, p.cache.k_bf16, p.cache.v_bf16);
  } else {
    PagedKvAppendKernel<<<num_tokens, kThreads, 0, stream>>>(p, p.cache.k, p.cache.v);
  }
  return cudaGetLastError();
}

}  // namespace arbor::kernels
