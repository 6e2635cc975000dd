// A buffer for per-step data that grows (never shrinks, by at least half each time) with the
// largest step seen: device memory, or pinned host memory that the device copies to and from
// asynchronously (a pageable copy would stage through a driver buffer and make the host wait).
// Reallocation first waits for the stream, since work in flight may still use the old one.
#ifndef ARBOR_KERNELS_CUDA_CUDA_BUFFER_H_
#define ARBOR_KERNELS_CUDA_CUDA_BUFFER_H_

#include <cuda_runtime_api.h>

#include <cstddef>

#include "absl/status/statusor.h"

namespace arbor::kernels {

class CudaBuffer {
 public:
  enum class Memory { kDevice, kPinnedHost };

  explicit CudaBuffer(Memory memory = Memory::kDevice) : memory_(memory) {}
  ~CudaBuffer();
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  // At least `bytes` (named `what` in errors), synchronising `stream` before a reallocation.
  absl::StatusOr<void*> Grow(size_t bytes, cudaStream_t stream, const char* what);
  void* get() const { return ptr_; }

 private:
  void Free();

  Memory memory_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_CUDA_CUDA_BUFFER_H_
