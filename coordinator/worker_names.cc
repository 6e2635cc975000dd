#include "coordinator/worker_names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/host_port.h"

namespace arbor::coordinator {
namespace {

bool OnlyOf(absl::string_view s, absl::string_view extra) {
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        extra.find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

}  // namespace

absl::Status CheckWorkerId(absl::string_view id, absl::string_view field) {
  if (id.empty() || id.size() > kMaxWorkerIdBytes || !OnlyOf(id, "._:@[]-")) {
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
  if (!parsed.ok() || parsed->port == 0 || !OnlyOf(parsed->host, ".-:_")) {
    return Invalid(field,
                   "must be host:port with a host name or IP address and a port in "
                   "[1, 65535], as the worker's --advertise or --listen gives it");
  }
  return absl::OkStatus();
}

}  // namespace arbor::coordinator
