// The little a job store needs of an SQL database: one statement at a time with positional
// parameters ($1, $2, … in order of first use, which SQLite and PostgreSQL both read) and rows
// of integers and byte strings back. SqlJobStore (sql_job_store.h) writes its portable SQL
// against this; each back end (sqlite_database.h, postgres_database.h) maps it onto its client
// library. Not thread-safe: the store serializes its calls.
#ifndef ARBOR_COORDINATOR_STORE_SQL_DATABASE_H_
#define ARBOR_COORDINATOR_STORE_SQL_DATABASE_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace arbor::coordinator {

// Bytes bound as a BLOB (SQLite) or BYTEA (PostgreSQL) rather than as text.
struct SqlBlob {
  std::string bytes;
};

// A parameter: a 64-bit integer, UTF-8 text or bytes.
using SqlValue = std::variant<int64_t, std::string, SqlBlob>;

// One result row: each column an integer, bytes (text or blob) or NULL (monostate).
class SqlRow {
 public:
  using Cell = std::variant<std::monostate, int64_t, std::string>;
  explicit SqlRow(std::vector<Cell> cells) : cells_(std::move(cells)) {}

  // The column's integer; 0 for NULL. INTERNAL when the column holds bytes.
  absl::StatusOr<int64_t> Int(size_t column) const;
  // The column's bytes; empty for NULL. INTERNAL when the column holds an integer.
  absl::StatusOr<std::string> Bytes(size_t column) const;
  size_t size() const { return cells_.size(); }

 private:
  std::vector<Cell> cells_;
};

class SqlDatabase {
 public:
  virtual ~SqlDatabase() = default;

  // Runs one statement. ALREADY_EXISTS when it breaks a unique key, UNAVAILABLE when the
  // database cannot be reached or is busy beyond its wait, INTERNAL for other errors; each names
  // the database and says what failed.
  virtual absl::StatusOr<std::vector<SqlRow>> Query(absl::string_view sql,
                                                    absl::Span<const SqlValue> params) = 0;
  // The column type of byte strings: "BLOB" or "BYTEA".
  virtual absl::string_view BlobType() const = 0;
  // What to call the database in messages (its path or host, never a password).
  virtual std::string Describe() const = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_SQL_DATABASE_H_
