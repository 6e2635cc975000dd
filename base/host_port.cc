#include "base/host_port.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace arbor::base {

absl::StatusOr<HostPort> ParseHostPort(absl::string_view address) {
  const size_t colon = address.rfind(':');
  absl::string_view host = address.substr(0, colon == absl::string_view::npos ? 0 : colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  HostPort out;
  if (colon == absl::string_view::npos || host.empty() ||
      !absl::SimpleAtoi(address.substr(colon + 1), &out.port) || out.port < 0 || out.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", address, "' is not host:port with a port in [0, 65535] (0 picks a free port)"));
  }
  out.host = std::string(host);
  return out;
}

}  // namespace arbor::base
