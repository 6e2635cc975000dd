#include "metrics/http_bind.h"

#include <sys/socket.h>

#include "absl/strings/str_cat.h"
#include "base/host_port.h"

namespace arbor::metrics {

absl::StatusOr<int> BindHttpServer(httplib::Server& server, absl::string_view listen) {
  absl::StatusOr<base::HostPort> address = base::ParseHostPort(listen);
  if (!address.ok()) return address.status();
  // SO_REUSEADDR only: a restarted process may rebind while old connections linger.
  server.set_socket_options([](socket_t socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const int port = address->port == 0 ? server.bind_to_any_port(address->host)
                   : server.bind_to_port(address->host, address->port) ? address->port
                                                                       : -1;
  if (port <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot bind ", listen, ": the address is in use or not of this host"));
  }
  return port;
}

}  // namespace arbor::metrics
