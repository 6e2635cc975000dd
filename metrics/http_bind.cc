#include "metrics/http_bind.h"

#include <sys/socket.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "base/host_port.h"

namespace arbor::metrics {

absl::StatusOr<int> BindHttpServer(httplib::Server& server, absl::string_view listen) {
  absl::StatusOr<base::HostPort> address = base::ParseHostPort(listen);
  if (!address.ok()) return address.status();
  // SO_REUSEADDR only: a restarted process may rebind while old connections linger. The socket
  // is remembered so that its backlog can be raised once it listens.
  auto bound = std::make_shared<socket_t>(INVALID_SOCKET);
  server.set_socket_options([bound](socket_t socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *bound = socket;
  });
  const int port = address->port == 0 ? server.bind_to_any_port(address->host)
                   : server.bind_to_port(address->host, address->port) ? address->port
                                                                       : -1;
  if (port <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot bind ", listen, ": the address is in use or not of this host"));
  }
  // httplib listens with a backlog of 5: a burst of new connections beyond it (16 clients
  // opening streams at once) can be refused. Listening again on the socket raises the queue.
  if (*bound != INVALID_SOCKET) ::listen(*bound, SOMAXCONN);
  return port;
}

}  // namespace arbor::metrics
