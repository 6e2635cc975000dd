#include "rpc/security.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/support/client_interceptor.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/host_port.h"

ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain of this process. With --tls_key and --tls_ca, every gRPC "
          "server of the process speaks TLS and every channel it opens presents this "
          "certificate (coordinator and workers authenticate each other: mutual TLS). "
          "scripts/make-certs.sh makes a test CA and certificates.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA certificates that peers' certificates must be signed by: servers this process "
          "dials, and cluster members (workers, coordinators) that dial it.");
ABSL_FLAG(int, tls_refresh_seconds, 60,
          "How often servers re-read --tls_cert, --tls_key and --tls_ca, so renewed certificates "
          "take effect without a restart (new connections get them), >= 1.");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name to check in servers' certificates instead of the dialled host (e.g. one "
          "certificate for every worker of a cluster whose pod addresses are not known ahead).");
ABSL_FLAG(std::string, token_file, "",
          "A file holding the bearer token this process presents to a coordinator (clients: "
          "the public API; workers: registration). The ARBOR_TOKEN environment variable is used "
          "when this is empty.");
ABSL_FLAG(bool, insecure, false,
          "Allow listening beyond loopback without TLS (and, for the public API, without "
          "--auth_tokens_file). Anyone who can reach the port can then use it.");

namespace arbor::rpc {
namespace {

// Adds "authorization: Bearer TOKEN" to every call of a channel.
class BearerInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", *header_});
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

class BearerInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerInterceptorFactory(std::string token) : header_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(&header_);
  }

 private:
  const std::string header_;  // Outlives the channel's interceptors: the factory is kept by it.
};

Security& Process() {
  static Security* security = new Security();
  return *security;
}

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok())
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", text.status().message()));
  if (!absl::StrContains(*text, "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", path, " is not a PEM file"));
  }
  return *std::move(text);
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

}  // namespace

absl::StatusOr<Security> Security::FromFlags() {
  Security s;
  const std::string cert = absl::GetFlag(FLAGS_tls_cert), key = absl::GetFlag(FLAGS_tls_key),
                    ca = absl::GetFlag(FLAGS_tls_ca);
  if (cert.empty() != key.empty() || (!cert.empty() && ca.empty())) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key go together, and with --tls_ca, the CA that peers are checked "
        "against (scripts/make-certs.sh makes all three); a client that only checks servers "
        "needs just --tls_ca");
  }
  if (!ca.empty()) {
    absl::StatusOr<std::string> pem = ReadPem("tls_ca", ca);
    if (!pem.ok()) return pem.status();
    s.ca_pem_ = *std::move(pem);
  }
  if (!cert.empty()) {
    absl::StatusOr<std::string> pem = ReadPem("tls_cert", cert);
    if (!pem.ok()) return pem.status();
    s.cert_pem_ = *std::move(pem);
    if (!(pem = ReadPem("tls_key", key)).ok()) return pem.status();
    s.key_pem_ = *std::move(pem);
    s.cert_file_ = cert;
    s.key_file_ = key;
    s.ca_file_ = ca;
  }
  s.server_name_ = absl::GetFlag(FLAGS_tls_server_name);
  if (absl::GetFlag(FLAGS_tls_refresh_seconds) < 1) {
    return absl::InvalidArgumentError("--tls_refresh_seconds: must be >= 1");
  }
  s.refresh_seconds_ = static_cast<unsigned>(absl::GetFlag(FLAGS_tls_refresh_seconds));
  if (const std::string file = absl::GetFlag(FLAGS_token_file); !file.empty()) {
    absl::StatusOr<std::string> token = base::ReadFile(file);
    if (!token.ok())
      return absl::InvalidArgumentError(absl::StrCat("--token_file: ", token.status().message()));
    s.token_ = std::string(absl::StripAsciiWhitespace(*token));
    if (s.token_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--token_file: ", file, " is empty"));
    }
  } else if (const char* env = std::getenv("ARBOR_TOKEN"); env != nullptr) {
    s.token_ = std::string(absl::StripAsciiWhitespace(env));
  }
  return s;
}

std::shared_ptr<grpc::ServerCredentials> Security::ServerCredentials(
    ClientCerts client_certs) const {
  if (!tls()) return grpc::InsecureServerCredentials();
  // The files, not their contents at start: gRPC re-reads them every refresh interval, so a
  // renewed certificate (or CA bundle) serves new connections without a restart.
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      key_file_, cert_file_, ca_file_, refresh_seconds_);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(client_certs == ClientCerts::kRequired
                                    ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                    : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  return grpc::experimental::TlsServerCredentials(options);
}

std::shared_ptr<grpc::Channel> Security::Dial(const std::string& address,
                                              grpc::ChannelArguments arguments) const {
  return Connect(address, std::move(arguments), server_name_);
}

std::shared_ptr<grpc::Channel> Security::DialNamed(const std::string& address,
                                                   const std::string& server_name) const {
  return Connect(address, {}, server_name);
}

std::shared_ptr<grpc::Channel> Security::Connect(const std::string& address,
                                                 grpc::ChannelArguments arguments,
                                                 const std::string& server_name) const {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!ca_pem_.empty()) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ca_pem_;
    options.pem_private_key = key_pem_;  // Empty for a client without a certificate of its own.
    options.pem_cert_chain = cert_pem_;
    if (!server_name.empty()) arguments.SetSslTargetNameOverride(server_name);
    credentials = grpc::SslCredentials(options);
  }
  // Metadata rather than call credentials: gRPC sends those only over TLS, and a token on a
  // loopback plaintext channel (a local test cluster) must still reach the server.
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  if (!token_.empty()) interceptors.push_back(std::make_unique<BearerInterceptorFactory>(token_));
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, credentials, arguments,
                                                                 std::move(interceptors));
}

const Security& ProcessSecurity() { return Process(); }

absl::Status InitSecurity() {
  absl::StatusOr<Security> security = Security::FromFlags();
  if (!security.ok()) return security.status();
  Process() = *std::move(security);
  return absl::OkStatus();
}

absl::Status CheckExposure(const std::string& flag, const std::string& listen, bool tls,
                           bool needs_tokens, bool tokens) {
  absl::StatusOr<base::HostPort> address = base::ParseHostPort(listen);
  if (!address.ok() || IsLoopback(address->host)) return absl::OkStatus();
  if (tls && (tokens || !needs_tokens)) return absl::OkStatus();
  if (absl::GetFlag(FLAGS_insecure)) return absl::OkStatus();
  const std::string missing = !tls && needs_tokens && !tokens ? "TLS and bearer tokens"
                              : !tls                          ? "TLS"
                                                              : "bearer tokens";
  return absl::FailedPreconditionError(absl::StrCat(
      "--", flag, ": refusing to serve ", listen, " beyond loopback without ", missing,
      ". Make certificates with scripts/make-certs.sh and pass --tls_cert, --tls_key and "
      "--tls_ca",
      needs_tokens ? ", list tokens in --auth_tokens_file" : "",
      " (docs/SECURITY.md), or pass --insecure to accept that anyone who reaches the port can "
      "use it"));
}

}  // namespace arbor::rpc
