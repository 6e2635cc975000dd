// Address and worker-id parsing on arbitrary bytes: base::ParseHostPort (every --*_listen flag)
// and the Cluster API's checks of what a worker registers as (CheckWorkerAddress,
// CheckWorkerId). Each accepts or answers INVALID_ARGUMENT naming the field; what is accepted
// respects the documented bounds, and an accepted worker address also parses as host:port.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "base/host_port.h"
#include "coordinator/cluster/worker_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<arbor::base::HostPort> parsed = arbor::base::ParseHostPort(input);
  if (!parsed.ok() && parsed.status().code() != absl::StatusCode::kInvalidArgument) abort();
  if (parsed.ok() && (parsed->host.empty() || parsed->port < 0 || parsed->port > 65535)) abort();

  const absl::Status address = arbor::coordinator::CheckWorkerAddress(input, "address");
  if (!address.ok() && address.code() != absl::StatusCode::kInvalidArgument) abort();
  if (address.ok()) {
    if (size > arbor::coordinator::kMaxWorkerAddressBytes || !parsed.ok() || parsed->port < 1) {
      abort();
    }
  }
  const absl::Status id = arbor::coordinator::CheckWorkerId(input, "worker_id");
  if (!id.ok() && id.code() != absl::StatusCode::kInvalidArgument) abort();
  if (id.ok() && (size == 0 || size > arbor::coordinator::kMaxWorkerIdBytes)) abort();
  return 0;
}
