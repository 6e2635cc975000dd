// A private PostgreSQL server for the job store's tests: initdb into a fresh directory under
// the test's temp dir (the system's when the server's user could not reach that one, or its
// socket path would be too long), then `postgres` listening only on a Unix socket in that
// directory, so it touches no system cluster and no TCP port. As root the server runs as the `postgres` user
// (PostgreSQL refuses root). Stopped when destroyed; its directory goes with it unless the
// server failed to stop, when its log stays for inspection.
#ifndef ARBOR_TESTS_COORDINATOR_STORE_POSTGRES_SERVER_H_
#define ARBOR_TESTS_COORDINATOR_STORE_POSTGRES_SERVER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/subprocess.h"

namespace arbor::coordinator {

class PostgresServer {
 public:
  // The directory of Debian's PostgreSQL server binaries (/usr/lib/postgresql/N/bin, the
  // newest), or nullopt when the postgresql package is not installed.
  static std::optional<std::string> FindBinaries();

  // Starts a server with the binaries in `bin_dir`; fails saying which step did, with its log.
  static absl::StatusOr<PostgresServer> Start(const std::string& bin_dir);

  PostgresServer(PostgresServer&&) = default;
  // Fast shutdown (SIGINT: sessions end, nothing is kept waiting).
  ~PostgresServer();

  // The libpq connection string of the server's `postgres` database.
  const std::string& conninfo() const { return conninfo_; }

 private:
  PostgresServer(base::Subprocess process, std::string dir, std::string conninfo)
      : process_(std::move(process)), dir_(std::move(dir)), conninfo_(std::move(conninfo)) {}

  base::Subprocess process_;
  std::string dir_;
  std::string conninfo_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_TESTS_COORDINATOR_STORE_POSTGRES_SERVER_H_
