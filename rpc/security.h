// How a process proves who it is and checks its peers (docs/SECURITY.md): TLS from PEM files
// (--tls_cert, --tls_key, --tls_ca; mutual between coordinator and workers; a client that only
// checks the server needs just --tls_ca) and the bearer token it presents to a coordinator
// (--token_file, or the ARBOR_TOKEN environment variable). Every
// server and every channel of every binary takes its credentials from here, so one set of
// flags secures a process, and a process with none of them speaks plaintext as before.
#ifndef ARBOR_RPC_SECURITY_H_
#define ARBOR_RPC_SECURITY_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace arbor::rpc {

// Whether a TLS server asks its clients for certificates (signed by --tls_ca).
enum class ClientCerts {
  kOptional,  // Public port: users come with tokens; a verified certificate also counts.
  kRequired,  // Workers and the cluster port: only holders of a cluster certificate connect.
};

class Security {
 public:
  // Plaintext, no token.
  Security() = default;
  // From the flags above; INVALID_ARGUMENT naming the flag for an unreadable or non-PEM file,
  // or a partial set (a certificate needs its key and a CA to check peers against).
  static absl::StatusOr<Security> FromFlags();

  // Whether this process serves TLS (it has a certificate); channels use TLS with --tls_ca.
  bool tls() const { return !cert_pem_.empty(); }
  // The PEM files (for servers that read them themselves, such as the HTTP gateway).
  const std::string& cert_file() const { return cert_file_; }
  const std::string& key_file() const { return key_file_; }
  const std::string& token() const { return token_; }

  std::shared_ptr<grpc::ServerCredentials> ServerCredentials(ClientCerts client_certs) const;
  // A channel to `address` with this process's TLS identity (verifying the server against
  // --tls_ca, under --tls_server_name when set) or plaintext; every call on it carries the
  // bearer token, if any.
  std::shared_ptr<grpc::Channel> Dial(const std::string& address,
                                      grpc::ChannelArguments arguments = {}) const;
  // The same, checking `server_name` in the server's certificate instead of --tls_server_name
  // (which names the workers' certificate): a coordinator dialling another coordinator.
  std::shared_ptr<grpc::Channel> DialNamed(const std::string& address,
                                           const std::string& server_name) const;

 private:
  // Dial's channel, checking `server_name` (empty: the dialled host) over TLS.
  std::shared_ptr<grpc::Channel> Connect(const std::string& address,
                                         grpc::ChannelArguments arguments,
                                         const std::string& server_name) const;

  std::string cert_file_, key_file_, ca_file_;
  unsigned refresh_seconds_ = 60;
  std::string cert_pem_, key_pem_, ca_pem_, server_name_, token_;
};

// The settings InitSecurity read; plaintext without a token before it ran.
const Security& ProcessSecurity();
// Reads the flags once, after flag parsing; the error names the flag.
absl::Status InitSecurity();

// A server asked to listen on `listen` (the flag `flag`) beyond loopback must be protected:
// TLS, plus bearer tokens where `needs_tokens` (the public API), unless --insecure. The error
// says how to make certificates and tokens.
absl::Status CheckExposure(const std::string& flag, const std::string& listen, bool tls,
                           bool needs_tokens, bool tokens);

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_SECURITY_H_
