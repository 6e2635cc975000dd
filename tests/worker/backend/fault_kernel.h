// Launches a kernel that faults on `stream` (an illegal address), to test what the CUDA backend
// does after a sticky error.
#ifndef ARBOR_TESTS_WORKER_BACKEND_FAULT_KERNEL_H_
#define ARBOR_TESTS_WORKER_BACKEND_FAULT_KERNEL_H_

#include <cuda_runtime_api.h>

namespace arbor::worker::testing {

// The launch's own status (the fault shows at the next synchronisation).
cudaError_t LaunchIllegalWrite(cudaStream_t stream);

}  // namespace arbor::worker::testing

#endif  // ARBOR_TESTS_WORKER_BACKEND_FAULT_KERNEL_H_
