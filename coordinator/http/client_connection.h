// Whether the client of a request the gateway is still answering has gone away.
//
// A blocking completion waits for its jobs without writing anything, so the HTTP library (which
// notices a closed connection only on a write, and in this version offers no other check) would
// let an abandoned request run all its jobs to the end. This finds the request's socket among
// the process's descriptors by its two endpoints, once, and then asks the kernel whether the
// peer has shut its side (POLLRDHUP), which a TLS close or a dropped client both do.
#ifndef ARBOR_COORDINATOR_HTTP_CLIENT_CONNECTION_H_
#define ARBOR_COORDINATOR_HTTP_CLIENT_CONNECTION_H_

#include <string>

#include "httplib.h"

namespace arbor::coordinator::http {

class ClientConnection {
 public:
  explicit ClientConnection(const httplib::Request& request);

  // True once the peer has closed or reset the connection. False while it is open, and when the
  // socket could not be found (then nothing is ever reported gone).
  bool gone() const;

 private:
  // Whether descriptor `fd` is a TCP socket between the request's endpoints.
  bool Matches(int fd) const;

  std::string local_addr_, remote_addr_;
  int local_port_ = -1, remote_port_ = -1;
  int fd_ = -1;
};

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_CLIENT_CONNECTION_H_
