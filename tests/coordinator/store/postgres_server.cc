#include "tests/coordinator/store/postgres_server.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace arbor::coordinator {
namespace {

constexpr char kUser[] = "arbor";
constexpr char kPort[] = "5432";  // Only names the socket file: nothing listens on TCP.

std::string ReadLog(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `argv` as it must run: as the postgres user when this process is root.
absl::StatusOr<std::vector<std::string>> AsServerUser(std::vector<std::string> argv,
                                                      const std::string& dir) {
  if (geteuid() != 0) return argv;
  const passwd* user = getpwnam("postgres");
  if (user == nullptr) {
    return absl::FailedPreconditionError("running as root, and there is no postgres user");
  }
  std::error_code error;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, error)) {
    if (chown(entry.path().c_str(), user->pw_uid, user->pw_gid) != 0) {
      return absl::InternalError(absl::StrCat("chown ", entry.path().string()));
    }
  }
  if (chown(dir.c_str(), user->pw_uid, user->pw_gid) != 0) {
    return absl::InternalError(absl::StrCat("chown ", dir));
  }
  argv.insert(argv.begin(),
              {"setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups", "--reset-env"});
  return argv;
}

// Where the server's files and socket go: under the test's temp dir, unless the postgres user
// (when this process is root) cannot reach it or the socket's path would pass the 107 bytes a
// Unix socket's name may have; then under the system's temp dir.
std::string ServerDir() {
  const std::string dir = absl::StrCat(::testing::TempDir(), "pg-", getpid());
  bool reachable = dir.size() + sizeof("/.s.PGSQL.5432") <= 107;
  if (geteuid() == 0) {
    for (std::filesystem::path up = std::filesystem::path(::testing::TempDir()).parent_path();
         reachable && up.has_relative_path(); up = up.parent_path()) {
      std::error_code error;
      const auto permissions = std::filesystem::status(up, error).permissions();
      reachable = !error && (permissions & std::filesystem::perms::others_exec) !=
                                std::filesystem::perms::none;
    }
  }
  if (reachable) return dir;
  return (std::filesystem::temp_directory_path() / absl::StrCat("arbor-pg-", getpid())).string();
}

}  // namespace

std::optional<std::string> PostgresServer::FindBinaries() {
  std::optional<std::string> newest;
  int newest_version = -1;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", error)) {
    const std::string bin = (entry.path() / "bin").string();
    const int version = std::atoi(entry.path().filename().c_str());
    if (std::filesystem::exists(bin + "/initdb") && std::filesystem::exists(bin + "/postgres") &&
        version > newest_version) {
      newest = bin;
      newest_version = version;
    }
  }
  return newest;
}

absl::StatusOr<PostgresServer> PostgresServer::Start(const std::string& bin_dir) {
  const std::string dir = ServerDir();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string log = dir + "/server.log";
  absl::StatusOr<std::vector<std::string>> initdb =
      AsServerUser({bin_dir + "/initdb", "-D", dir + "/data", "-U", kUser, "-A", "trust",
                    "--no-sync", "--no-instructions"},
                   dir);
  if (!initdb.ok()) return initdb.status();
  absl::StatusOr<base::Subprocess> init = base::Subprocess::Start(*initdb, dir + "/initdb.log");
  if (!init.ok()) return init.status();
  if (init->Wait(absl::Seconds(120)) != 0) {
    return absl::InternalError(absl::StrCat("initdb failed:\n", ReadLog(dir + "/initdb.log")));
  }
  absl::StatusOr<std::vector<std::string>> postgres =
      AsServerUser({bin_dir + "/postgres", "-D", dir + "/data", "-k", dir, "-p", kPort, "-c",
                    "listen_addresses=", "-c", "fsync=off"},
                   dir);
  if (!postgres.ok()) return postgres.status();
  absl::StatusOr<base::Subprocess> server = base::Subprocess::Start(*postgres, log);
  if (!server.ok()) return server.status();
  const std::string conninfo =
      absl::StrCat("host=", dir, " port=", kPort, " user=", kUser, " dbname=postgres");
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (PQping(conninfo.c_str()) != PQPING_OK) {
    if (server->Wait(absl::ZeroDuration()).has_value() || absl::Now() > give_up) {
      return absl::InternalError(absl::StrCat("postgres did not start:\n", ReadLog(log)));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return PostgresServer(*std::move(server), dir, conninfo);
}

PostgresServer::~PostgresServer() {
  if (process_.pid() <= 0) return;  // Moved from.
  process_.Signal(SIGINT);
  if (process_.Wait(absl::Seconds(30)) == 0) std::filesystem::remove_all(dir_);
}

}  // namespace arbor::coordinator
