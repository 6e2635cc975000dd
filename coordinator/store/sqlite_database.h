// SqlDatabase over one SQLite file: the embedded default job store. The file is opened in WAL
// mode with synchronous=FULL, so a statement that returned has reached the disk (a job is
// acknowledged only after its row is durable) while readers do not block the writer; a busy
// file is waited on for up to five seconds.
#ifndef ARBOR_COORDINATOR_STORE_SQLITE_DATABASE_H_
#define ARBOR_COORDINATOR_STORE_SQLITE_DATABASE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/store/sql_database.h"

struct sqlite3;

namespace arbor::coordinator {

class SqliteDatabase final : public SqlDatabase {
 public:
  // Opens (creating) the file at `path`. UNAVAILABLE naming the path when it cannot be opened
  // or is not an SQLite database.
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& path);
  ~SqliteDatabase() override;

  absl::StatusOr<std::vector<SqlRow>> Query(absl::string_view sql,
                                            absl::Span<const SqlValue> params) override;
  absl::string_view BlobType() const override { return "BLOB"; }
  std::string Describe() const override { return "SQLite job store " + path_; }

 private:
  SqliteDatabase(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  // The database's last error as a status of `code`, saying what `doing` was.
  absl::Status Error(absl::string_view doing) const;

  const std::string path_;
  sqlite3* const db_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_SQLITE_DATABASE_H_
