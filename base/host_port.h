// "host:port" listen addresses as flags give them (--metrics_listen, --http_listen): split and
// checked once, so every server that binds one reports a bad address the same way.
#ifndef ARBOR_BASE_HOST_PORT_H_
#define ARBOR_BASE_HOST_PORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arbor::base {

struct HostPort {
  std::string host;  // Without the brackets of an IPv6 literal ("[::1]:80" gives "::1").
  int port = 0;      // In [0, 65535]; 0 asks the system for a free port.
};

// INVALID_ARGUMENT quoting `address` when it is not host:port with a non-empty host and a port
// of 1 to 5 decimal digits in [0, 65535].
absl::StatusOr<HostPort> ParseHostPort(absl::string_view address);

}  // namespace arbor::base

#endif  // ARBOR_BASE_HOST_PORT_H_
