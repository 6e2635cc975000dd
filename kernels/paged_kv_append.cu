#include "kernels/paged_kv_append_cuda.h"
#include "kernels/paged_kv_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 128;

// One block per step token: find its sequence and slot once, then copy its K and V rows.
__global__ void PagedKvAppendKernel(PagedKvAppendParams p) {
  const int64_t t = blockIdx.x;
  const int64_t seq = DeviceSeqOfToken(p.batch, t);
  const int64_t slot =
      DevicePagedSlot(p.batch, p.cache.block_size, seq, DevicePagedPosition(p.batch, seq, t));
  const int64_t width = p.cache.num_kv_heads * p.cache.head_dim;
  for (int64_t i = threadIdx.x; i < width; i += kThreads) {
    p.cache.k[slot * width + i] = p.k[t * p.k_stride + i];
    p.cache.v[slot * width + i] = p.v[t * p.v_stride + i];
  }
}

}  // namespace

cudaError_t LaunchPagedKvAppend(const PagedKvAppendParams& p, int64_t num_tokens,
                                cudaStream_t stream) {
  if (num_tokens == 0) return cudaSuccess;
  if (p.cache.bf16()) return cudaErrorNotSupported;  // bf16 pools: CPU ops only so far.
  PagedKvAppendKernel<<<num_tokens, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
