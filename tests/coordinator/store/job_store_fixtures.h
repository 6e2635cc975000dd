// What the job store's tests share: the back ends, for typed tests that run one contract on
// each (a fresh SQLite file per test, and one PostgreSQL server per suite, postgres_server.h,
// whose table each test starts without; Reset() is NOT_FOUND where the postgresql package is
// absent), and sample jobs to store.
#ifndef ARBOR_TESTS_COORDINATOR_STORE_JOB_STORE_FIXTURES_H_
#define ARBOR_TESTS_COORDINATOR_STORE_JOB_STORE_FIXTURES_H_

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "coordinator/store/job_store.h"
#include "coordinator/store/postgres_database.h"
#include "coordinator/store/sqlite_database.h"
#include "gtest/gtest.h"
#include "tests/coordinator/store/postgres_server.h"

namespace arbor::coordinator {

// A fresh SQLite file per test, removed after it.
class SqliteBackend {
 public:
  ~SqliteBackend() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }
  static void SetUpTestSuite() {}
  static void TearDownTestSuite() {}
  absl::Status Reset() {
    static std::atomic<int> next{0};
    path_ = absl::StrCat(::testing::TempDir(), "job_store_", getpid(), "_", next++, ".db");
    std::remove(path_.c_str());
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<SqlDatabase>> Connect() {
    ASSIGN_OR_RETURN(std::unique_ptr<SqliteDatabase> db, SqliteDatabase::Open(path_));
    return std::unique_ptr<SqlDatabase>(std::move(db));
  }
  std::string Spec() const { return "sqlite:" + path_; }

 private:
  std::string path_;
};

// One server for the suite; each test starts from an empty table.
class PostgresBackend {
 public:
  static void SetUpTestSuite() {
    const std::optional<std::string> bin = PostgresServer::FindBinaries();
    if (!bin) return;
    absl::StatusOr<PostgresServer> started = PostgresServer::Start(*bin);
    if (started.ok()) {
      server_ = new PostgresServer(*std::move(started));
    } else {
      start_error_ = new absl::Status(started.status());
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  absl::Status Reset() {
    if (start_error_ != nullptr) return *start_error_;
    if (server_ == nullptr) return absl::NotFoundError("skip");
    ASSIGN_OR_RETURN(std::unique_ptr<SqlDatabase> db, Connect());
    return db->Query("DROP TABLE IF EXISTS arbor_jobs", {}).status();
  }
  absl::StatusOr<std::unique_ptr<SqlDatabase>> Connect() {
    ASSIGN_OR_RETURN(std::unique_ptr<PostgresDatabase> db,
                     PostgresDatabase::Open(server_->conninfo()));
    return std::unique_ptr<SqlDatabase>(std::move(db));
  }
  std::string Spec() const { return "postgres:" + server_->conninfo(); }

 private:
  static inline PostgresServer* server_ = nullptr;
  static inline absl::Status* start_error_ = nullptr;
};

using Backends = ::testing::Types<SqliteBackend, PostgresBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, SqliteBackend> ? "Sqlite" : "Postgres";
  }
};
inline AcceptedJob Accepted(const std::string& job_id, int64_t created_ms) {
  AcceptedJob job;
  job.job_id = job_id;
  job.owner = "alice";
  job.client_tag = "tag";
  job.model = "tiny";
  job.model_fingerprint = "llama L2 vocab 256";
  job.created = absl::FromUnixMillis(created_ms);
  job.request.mutable_tokens()->add_token_ids(1);
  job.request.mutable_tokens()->add_token_ids(2);
  job.request.set_seed(42);
  job.request.set_max_tokens(8);
  job.request.mutable_policy()->mutable_branch()->set_width(3);
  return job;
}

inline FinishedJob Finished(const std::string& job_id, arbor::v1::JobState state, int64_t at_ms) {
  FinishedJob out;
  out.job.set_job_id(job_id);
  out.job.set_state(state);
  out.job.set_text("hello");
  out.job.add_token_ids(7);
  for (int i = 0; i < 3; ++i) {
    arbor::v1::GenerateEvent& event = out.events.emplace_back();
    event.set_job_id(job_id);
    event.mutable_token()->set_token_id(i);
  }
  out.events.emplace_back().mutable_finished()->set_reason(arbor::v1::FINISH_REASON_STOP_TOKEN);
  out.tree.set_job_id(job_id);
  out.tree.add_nodes()->set_id(0);
  out.tree.add_nodes()->set_text(std::string(100, 'x'));
  out.at = absl::FromUnixMillis(at_ms);
  return out;
}

// What a typed test prints where the postgresql package is absent.
constexpr char kNoPostgres[] =
    "PostgreSQL's server binaries are absent (no /usr/lib/postgresql/N/bin/initdb): install "
    "the postgresql package (scripts/install-deps.sh)";

}  // namespace arbor::coordinator

#endif  // ARBOR_TESTS_COORDINATOR_STORE_JOB_STORE_FIXTURES_H_
