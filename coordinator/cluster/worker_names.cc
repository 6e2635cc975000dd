#include "coordinator/cluster/worker_names.h"

#include "absl/strings/str_cat.h"
#include "base/ascii_class.h"
#include "base/host_port.h"

namespace arbor::coordinator {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

}  // namespace

absl::Status CheckWorkerId(absl::string_view id, absl::string_view field) {
  if (id.empty() || id.size() > kMaxWorkerIdBytes || !base::AlnumOr(id, "._:@[]-")) {
    return Invalid(field, absl::StrCat("must be 1 to ", kMaxWorkerIdBytes,
                                       " bytes of [A-Za-z0-9._:@[]-] (", id.size(), " given)"));
  }
  return absl::OkStatus();
}

absl::Status CheckWorkerAddress(absl::string_view address, absl::string_view field) {
  if (address.size() > kMaxWorkerAddressBytes) {
    return Invalid(field, absl::StrCat("longer than ", kMaxWorkerAddressBytes, " bytes"));
  }
  absl::StatusOr<base::HostPort> parsed = base::ParseHostPort(address);
  if (!parsed.ok() || parsed->port == 0 || !base::AlnumOr(parsed->host, ".-:_")) {
    return Invalid(field,
                   "must be host:port with a host name or IP address and a port in "
                   "[1, 65535], as the worker's --advertise or --listen gives it");
  }
  return absl::OkStatus();
}

}  // namespace arbor::coordinator
