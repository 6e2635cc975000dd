// Device twins of paged_kv.h's index helpers, for the kernels that walk a PagedBatch (KV append,
// attention). paged_kv.h stays framework-free C++; these are the same formulas for device code.
// Include only from .cu files.
#ifndef ARBOR_KERNELS_PAGED_KV_CUDA_H_
#define ARBOR_KERNELS_PAGED_KV_CUDA_H_

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/paged_kv.h"

namespace arbor::kernels {

// A KV pool element as fp32: bf16 is the top half of an fp32 (exact), fp32 as it is.
__device__ inline float KvLoad(const float* x) { return *x; }
__device__ inline float KvLoad(const uint16_t* x) {
  return __uint_as_float(static_cast<uint32_t>(*x) << 16);
}
// Eight consecutive pool elements as fp32, in one 16-byte load (two for fp32); `x` must be
// 16-byte aligned (a row offset that is a multiple of 8 elements).
__device__ inline void KvLoad8(const float* x, float (&out)[8]) {
  const float4 a = reinterpret_cast<const float4*>(x)[0], b = reinterpret_cast<const float4*>(x)[1];
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
  out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}
__device__ inline void KvLoad8(const uint16_t* x, float (&out)[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(x);
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // Little-endian: the even element is the low half.
    out[2 * i] = __uint_as_float(words[i] << 16);
    out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}
// Stores fp32 `value` into a pool element: bf16 rounded to nearest, ties to even (as the CPU's
// base::FloatToBf16).
__device__ inline void KvStore(float* x, float value) { *x = value; }
__device__ inline void KvStore(uint16_t* x, float value) {
  *x = __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

// Slot of position `pos` of sequence `seq` (PagedSlot).
__device__ inline int64_t DevicePagedSlot(const PagedBatch& batch, int64_t block_size, int64_t seq,
                                          int64_t pos) {
  return int64_t{batch.block_ids[batch.block_start[seq] + pos / block_size]} * block_size +
         pos % block_size;
}

// Position of step token `token` of sequence `seq` (PagedPosition).
__device__ inline int64_t DevicePagedPosition(const PagedBatch& batch, int64_t seq, int64_t token) {
  return batch.kv_len[seq] - (batch.q_start[seq + 1] - batch.q_start[seq]) +
         (token - batch.q_start[seq]);
}

// The sequence whose query range holds `token`: the last s with q_start[s] <= token.
__device__ inline int64_t DeviceSeqOfToken(const PagedBatch& batch, int64_t token) {
  int64_t lo = 0, hi = batch.num_seqs - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (batch.q_start[mid] <= token) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_KV_CUDA_H_
