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
  // Digits only: SimpleAtoi alone would also take "+80" and " 80", which no dialler accepts.
  const absl::string_view port =
      colon == absl::string_view::npos ? absl::string_view() : address.substr(colon + 1);
  const bool digits = !port.empty() && port.size() <= 5 &&
                      port.find_first_not_of("0123456789") == absl::string_view::npos;
  HostPort out;
  if (colon == absl::string_view::npos || host.empty() || !digits ||
      !absl::SimpleAtoi(port, &out.port) || out.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", address, "' is not host:port with a port in [0, 65535] (0 picks a free port)"));
  }
  out.host = std::string(host);
  return out;
}

}  // namespace arbor::base
