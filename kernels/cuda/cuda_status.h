// The one place where CUDA errors (cudaError_t from launchers and runtime calls) become
// absl::Status, and where code asks whether a device is present at all.
#ifndef ARBOR_KERNELS_CUDA_CUDA_STATUS_H_
#define ARBOR_KERNELS_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace arbor::kernels {

// OK for cudaSuccess; otherwise INTERNAL (RESOURCE_EXHAUSTED for out-of-memory) with `what`
// and CUDA's own name and description of the error.
absl::Status CudaStatus(cudaError_t error, absl::string_view what);

// True for the errors that leave the CUDA context unusable ("sticky": every later call of the
// process on that device fails the same way), e.g. an illegal address in a kernel.
bool IsStickyCudaError(cudaError_t error);

// Number of usable CUDA devices; 0 when there is no driver or no device.
int CudaDeviceCount();

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_CUDA_CUDA_STATUS_H_
