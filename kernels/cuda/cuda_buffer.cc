#include "kernels/cuda/cuda_buffer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"

namespace arbor::kernels {

CudaBuffer::~CudaBuffer() { Free(); }

void CudaBuffer::Free() {
  if (ptr_ == nullptr) return;
  if (memory_ == Memory::kPinnedHost) {
    cudaFreeHost(ptr_);
  } else {
    cudaFree(ptr_);
  }
  ptr_ = nullptr;
  bytes_ = 0;
}

absl::StatusOr<void*> CudaBuffer::Grow(size_t bytes, cudaStream_t stream, const char* what) {
  if (bytes <= bytes_) return ptr_;
  if (absl::Status s = CudaStatus(cudaStreamSynchronize(stream), what); !s.ok()) return s;
  // Half again beyond the largest request so far: a slowly growing request (a batch's block ids)
  // moves the buffer rarely — each move is a new address, so a new CUDA graph to capture.
  bytes = std::max(bytes, bytes_ + bytes_ / 2);
  Free();
  const cudaError_t error =
      memory_ == Memory::kPinnedHost ? cudaMallocHost(&ptr_, bytes) : cudaMalloc(&ptr_, bytes);
  if (error != cudaSuccess) {
    ptr_ = nullptr;
    return CudaStatus(error, absl::StrCat(what, ": ", bytes, " bytes"));
  }
  bytes_ = bytes;
  return ptr_;
}

}  // namespace arbor::kernels
