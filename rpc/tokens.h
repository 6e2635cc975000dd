// Bearer tokens for the public API: a token file maps each token to a name and a role, and a
// call's "authorization: Bearer TOKEN" metadata names who is calling (docs/SECURITY.md).
//
// The file has one entry per line, `TOKEN NAME ROLE [jobs=N] [rows=N]`, with `#` comments and
// blank lines:
//   3f9c0a7d1b5e4c2a8f6e0d9b7a5c3e1f  alice  user  jobs=4 rows=16
//   ...                               ops    admin
//   ...                               node-7 worker
// Tokens are at least 16 characters of [A-Za-z0-9._~+/=-], names at most 64 of [A-Za-z0-9._@-].
// `user` runs jobs and sees only its own; `admin` sees every job and may use the Cluster API;
// `worker` may register and heartbeat as a worker and nothing else. The NAME is the tenant: the
// optional limits bound the jobs it has in flight at once and the rows they may run
// (entropix::PolicyConfig::RowsInFlight), over all of its tokens; every line of one name must
// give the same limits, and a limit left out is no limit.
#ifndef ARBOR_RPC_TOKENS_H_
#define ARBOR_RPC_TOKENS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace arbor::rpc {

enum class Role { kUser, kAdmin, kWorker };

// A tenant's share of the server, from its token file line; 0 is no limit.
struct TenantLimits {
  int jobs = 0;  // Jobs not finished yet (running or queued), `jobs=N`.
  int rows = 0;  // Their rows summed (entropix::PolicyConfig::RowsInFlight), `rows=N`.

  bool operator==(const TenantLimits&) const = default;
};

struct Identity {
  std::string name;
  Role role = Role::kUser;
  TenantLimits limits;
};

// The identity of every caller when no token file is configured: one trusted operator on
// loopback (the servers refuse other addresses without TLS and tokens unless --insecure).
Identity OpenIdentity();

class TokenTable {
 public:
  // INVALID_ARGUMENT naming the line for a malformed entry, a repeated token, or a limit that is
  // unknown, malformed, repeated, on a worker token or unlike another line's of the same name.
  static absl::StatusOr<TokenTable> Parse(const std::string& text);

  // The identity of `token`, compared against every entry in time independent of where (and
  // whether) it matches, so response times do not leak how much of a token was right.
  std::optional<Identity> Find(const std::string& token) const;
  size_t size() const { return entries_.size(); }
  // Every name listed, once each, in file order.
  std::vector<std::string> Names() const;

 private:
  struct Entry {
    std::string token;
    Identity identity;
  };
  std::vector<Entry> entries_;
};

// Equal in time that depends only on the lengths, not on where the strings differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

// The token table of a server, loaded from a file at start and again on Reload (SIGHUP).
class Authenticator {
 public:
  static absl::StatusOr<std::unique_ptr<Authenticator>> Load(const std::string& path);

  // Re-reads the file; on an error the previous table stays in force.
  absl::Status Reload();

  // The caller's identity from its "authorization: Bearer TOKEN" metadata; UNAUTHENTICATED
  // when it is missing, malformed or unknown (the message says which, never the token).
  absl::StatusOr<Identity> Authenticate(const grpc::ServerContextBase& context) const;
  // The same from an HTTP Authorization header's value (empty when there is none): the HTTP
  // gateway checks it before reading anything the caller sent.
  absl::StatusOr<Identity> Authenticate(absl::string_view authorization) const;
  // The names of the table in force (TokenTable::Names).
  std::vector<std::string> Names() const;

 private:
  Authenticator(std::string path, TokenTable table)
      : path_(std::move(path)), table_(std::move(table)) {}

  const std::string path_;
  mutable absl::Mutex mu_;
  TokenTable table_ ABSL_GUARDED_BY(mu_);
};

// The bearer token in `authorization` metadata ("Bearer TOKEN", scheme case-insensitive).
std::optional<std::string> BearerToken(const grpc::ServerContextBase& context);
// The same from the metadata's or header's value.
std::optional<std::string> BearerToken(absl::string_view authorization);

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_TOKENS_H_
