// Binding an httplib server to a listen flag's "host:port" the way gRPC servers here bind: the
// port is the process's alone. httplib's default socket options set SO_REUSEPORT, with which a
// second server "binds" a port already in use and the two silently share its connections; a
// busy port must be a start-up error instead.
#ifndef ARBOR_METRICS_HTTP_BIND_H_
#define ARBOR_METRICS_HTTP_BIND_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "httplib.h"

namespace arbor::metrics {

// Binds `server` to `listen` (port 0 picks a free port) and returns the bound port; serve with
// listen_after_bind(). INVALID_ARGUMENT for a malformed address, UNAVAILABLE when the address
// cannot be bound (in use, or not an address of this host).
absl::StatusOr<int> BindHttpServer(httplib::Server& server, absl::string_view listen);

}  // namespace arbor::metrics

#endif  // ARBOR_METRICS_HTTP_BIND_H_
