#include "kernels/rope_cuda.h"
#include "kernels/warp_reduce_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 128;

// One block per token. The angle is formed and evaluated in double, as in the reference, so
// positions in the hundreds of thousands keep their phase.
__global__ void RopeCosSinKernel(RopeCosSinParams p) {
  const int64_t t = blockIdx.x;
  const int64_t half = p.head_dim / 2;
  const double pos = p.positions[t];
  for (int64_t i = threadIdx.x; i < half; i += kThreads) {
    double s, c;
    sincos(pos * static_cast<double>(p.inv_freq[i]), &s, &c);
    p.cos[t * half + i] = static_cast<float>(c);
    p.sin[t * half + i] = static_cast<float>(s);
  }
}

// One block per token; threads over (head, pair) so each rotation pair is one thread.
__global__ void RopeKernel(RopeParams p) {
  const int64_t t = blockIdx.x;
  const int64_t half = p.head_dim / 2;
  const float* cos = p.cos + t * half;
  const float* sin = p.sin + t * half;
  for (int64_t item = threadIdx.x; item < p.num_heads * half; item += kThreads) {
    const int64_t h = item / half, i = item % half;
    float* x = p.x + t * p.token_stride + h * p.head_dim;
    const float a = x[i], b = x[i + half];
    x[i] = a * cos[i] - b * sin[i];
    x[i + half] = b * cos[i] + a * sin[i];
  }
}

// One block per token, a warp per head: the warp sums the head's squares (fp32 per lane, double
// across lanes, as RmsNormKernel), then each lane scales and rotates its own pairs. The warp sum's
// shuffles order every lane's reads of the squares before any lane writes, and in the rotation
// lanes touch disjoint pairs, so no other barrier is needed.
__global__ void NormRopeKernel(RopeParams p, HeadNormParams norm) {
  const int64_t t = blockIdx.x;
  const int64_t half = p.head_dim / 2;
  const float* cos = p.cos + t * half;
  const float* sin = p.sin + t * half;
  const int lane = threadIdx.x % 32;
  for (int64_t h = threadIdx.x / 32; h < p.num_heads; h += kThreads / 32) {
    float* x = p.x + t * p.token_stride + h * p.head_dim;
    const float* w = h < norm.q_heads ? norm.q_weight : norm.k_weight;
    float local = 0.0f;
    for (int64_t i = lane; i < p.head_dim; i += 32) local += x[i] * x[i];
    const double sum = WarpSum(static_cast<double>(local));
    const float inv_rms =
        static_cast<float>(1.0 / sqrt(sum / static_cast<double>(p.head_dim) + norm.eps));
    for (int64_t i = lane; i < half; i += 32) {
      const float a = x[i] * inv_rms * w[i], b = x[i + half] * inv_rms * w[i + half];
      x[i] = a * cos[i] - b * sin[i];
      x[i + half] = b * cos[i] + a * sin[i];
    }
  }
}

}  // namespace

cudaError_t LaunchRopeCosSin(const RopeCosSinParams& p, cudaStream_t stream) {
  if (p.num_tokens == 0) return cudaSuccess;
  RopeCosSinKernel<<<p.num_tokens, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t LaunchRope(const RopeParams& p, cudaStream_t stream) {
  if (p.num_tokens == 0) return cudaSuccess;
  RopeKernel<<<p.num_tokens, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t LaunchNormRope(const RopeParams& p, const HeadNormParams& norm, cudaStream_t stream) {
  if (p.num_tokens == 0) return cudaSuccess;
  NormRopeKernel<<<p.num_tokens, kThreads, 0, stream>>>(p, norm);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
