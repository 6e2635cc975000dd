// A kernel that writes through a bad pointer, for the GPU test of a sticky CUDA error: after it
// the context is unusable (cudaErrorIllegalAddress on every later call).
#include "tests/worker/backend/fault_kernel.h"

namespace arbor::worker::testing {
namespace {

__global__ void WriteThrough(int* pointer) { *pointer = 1; }

}  // namespace

cudaError_t LaunchIllegalWrite(cudaStream_t stream) {
  WriteThrough<<<1, 1, 0, stream>>>(reinterpret_cast<int*>(0x10));
  return cudaGetLastError();
}

}  // namespace arbor::worker::testing
