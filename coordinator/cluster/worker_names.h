// Bounds on what a worker calls itself and where it says it listens. A registration is stored
// and listed for as long as the worker lives, so a caller must not be able to make the
// coordinator keep (or every ListWorkers answer carry) megabytes per worker, and the address
// is dialled, so it must be one a resolver accepts.
#ifndef ARBOR_COORDINATOR_CLUSTER_WORKER_NAMES_H_
#define ARBOR_COORDINATOR_CLUSTER_WORKER_NAMES_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace arbor::coordinator {

inline constexpr size_t kMaxWorkerIdBytes = 128;
inline constexpr size_t kMaxWorkerAddressBytes = 256;

// 1 to 128 bytes of [A-Za-z0-9._:@[]-] (an address, a pod or host name); else INVALID_ARGUMENT
// naming `field`.
absl::Status CheckWorkerId(absl::string_view id, absl::string_view field);

// host:port with a host name or IP literal (IPv6 in brackets) and a port in [1, 65535], at most
// 256 bytes; else INVALID_ARGUMENT naming `field`.
absl::Status CheckWorkerAddress(absl::string_view address, absl::string_view field);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_WORKER_NAMES_H_
