#include "coordinator/http/client_connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

namespace arbor::coordinator::http {
namespace {

// The address and port of `addr` as httplib writes them ("127.0.0.1", "::1").
bool SocketAddress(const sockaddr_storage& addr, std::string* host, int* port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    if (inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text)) == nullptr) return false;
    *port = ntohs(in.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    if (inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text)) == nullptr) return false;
    *port = ntohs(in6.sin6_port);
  } else {
    return false;
  }
  *host = text;
  return true;
}

}  // namespace

ClientConnection::ClientConnection(const httplib::Request& request)
    : local_addr_(request.local_addr),
      remote_addr_(request.remote_addr),
      local_port_(request.local_port),
      remote_port_(request.remote_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && Matches(static_cast<int>(fd))) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
}

bool ClientConnection::Matches(int fd) const {
  sockaddr_storage local{}, peer{};
  socklen_t local_size = sizeof(local), peer_size = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) {
    return false;
  }
  std::string local_host, peer_host;
  int local_port = -1, peer_port = -1;
  return SocketAddress(local, &local_host, &local_port) &&
         SocketAddress(peer, &peer_host, &peer_port) && local_port == local_port_ &&
         peer_port == remote_port_ && peer_host == remote_addr_ &&
         (local_addr_.empty() || local_host == local_addr_);
}

bool ClientConnection::gone() const {
  // The descriptor stays the request's while its handler runs (httplib closes it afterwards),
  // so the number cannot be reused under us; a reset peer no longer has an address to match.
  if (fd_ < 0) return false;
  pollfd probe{fd_, POLLRDHUP, 0};
  return poll(&probe, 1, 0) == 1 && (probe.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace arbor::coordinator::http
