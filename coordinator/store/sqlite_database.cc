#include "coordinator/store/sqlite_database.h"

#include <sqlite3.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace arbor::coordinator {
namespace {

constexpr int kBusyTimeoutMs = 5000;

// Binds `params` to `statement` by position; SQLITE_TRANSIENT copies them.
int Bind(sqlite3_stmt* statement, absl::Span<const SqlValue> params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    int rc = SQLITE_OK;
    if (const int64_t* value = std::get_if<int64_t>(&params[i])) {
      rc = sqlite3_bind_int64(statement, index, *value);
    } else if (const std::string* text = std::get_if<std::string>(&params[i])) {
      rc = sqlite3_bind_text64(statement, index, text->data(), text->size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
    } else {
      const std::string& bytes = std::get<SqlBlob>(params[i]).bytes;
      rc = sqlite3_bind_blob64(statement, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
    }
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

SqlRow ReadRow(sqlite3_stmt* statement) {
  const int columns = sqlite3_column_count(statement);
  std::vector<SqlRow::Cell> cells;
  cells.reserve(columns);
  for (int c = 0; c < columns; ++c) {
    switch (sqlite3_column_type(statement, c)) {
      case SQLITE_NULL:
        cells.emplace_back(std::monostate());
        break;
      case SQLITE_INTEGER:
        cells.emplace_back(static_cast<int64_t>(sqlite3_column_int64(statement, c)));
        break;
      default: {
        const void* data = sqlite3_column_blob(statement, c);
        const int size = sqlite3_column_bytes(statement, c);
        cells.emplace_back(data == nullptr ? std::string()
                                           : std::string(static_cast<const char*>(data), size));
      }
    }
  }
  return SqlRow(std::move(cells));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status error = absl::UnavailableError(
        absl::StrCat("job store: cannot open SQLite file ", path, ": ",
                     db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close(db);
    return error;
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  std::unique_ptr<SqliteDatabase> out(new SqliteDatabase(path, db));
  // Each pragma reads the file's header: a file that is not a database fails here.
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
    absl::StatusOr<std::vector<SqlRow>> done = out->Query(pragma, {});
    if (!done.ok()) {
      return absl::UnavailableError(
          absl::StrCat("job store: cannot use SQLite file ", path, ": ", done.status().message()));
    }
  }
  return out;
}

SqliteDatabase::~SqliteDatabase() { sqlite3_close(db_); }

absl::Status SqliteDatabase::Error(absl::string_view doing) const {
  const int code = sqlite3_extended_errcode(db_);
  const std::string message = absl::StrCat(Describe(), ": ", doing, ": ", sqlite3_errmsg(db_));
  if (code == SQLITE_CONSTRAINT_PRIMARYKEY || code == SQLITE_CONSTRAINT_UNIQUE) {
    return absl::AlreadyExistsError(message);
  }
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED ||
      (code & 0xff) == SQLITE_CANTOPEN || (code & 0xff) == SQLITE_NOTADB) {
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

absl::StatusOr<std::vector<SqlRow>> SqliteDatabase::Query(absl::string_view sql,
                                                          absl::Span<const SqlValue> params) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &statement, nullptr) !=
      SQLITE_OK) {
    return Error(absl::StrCat("preparing \"", sql, "\""));
  }
  std::vector<SqlRow> rows;
  absl::Status status = absl::OkStatus();
  if (Bind(statement, params) != SQLITE_OK) status = Error("binding parameters");
  while (status.ok()) {
    const int rc = sqlite3_step(statement);
    if (rc == SQLITE_ROW) {
      rows.push_back(ReadRow(statement));
    } else {
      if (rc != SQLITE_DONE) status = Error(absl::StrCat("running \"", sql, "\""));
      break;
    }
  }
  sqlite3_finalize(statement);
  if (!status.ok()) return status;
  return rows;
}

}  // namespace arbor::coordinator
