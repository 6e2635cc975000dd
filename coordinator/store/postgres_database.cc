#include "coordinator/store/postgres_database.h"

#include <libpq-fe.h>

#include "absl/base/internal/endian.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace arbor::coordinator {
namespace {

// Type ids of PostgreSQL's built-in types (pg_type.oid).
constexpr Oid kInt8 = 20;
constexpr Oid kText = 25;
constexpr Oid kBytea = 17;
// The class of SQLSTATE 23505, unique_violation.
constexpr absl::string_view kUniqueViolation = "23505";

// `params` in libpq's binary form; `storage` keeps the integers' bytes alive.
struct BinaryParams {
  explicit BinaryParams(absl::Span<const SqlValue> params) {
    storage.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      if (const int64_t* value = std::get_if<int64_t>(&params[i])) {
        const uint64_t big_endian = absl::ghtonll(static_cast<uint64_t>(*value));
        storage[i].assign(reinterpret_cast<const char*>(&big_endian), sizeof(big_endian));
        types.push_back(kInt8);
      } else if (const std::string* text = std::get_if<std::string>(&params[i])) {
        storage[i] = *text;
        types.push_back(kText);
      } else {
        storage[i] = std::get<SqlBlob>(params[i]).bytes;
        types.push_back(kBytea);
      }
    }
    for (const std::string& bytes : storage) {
      values.push_back(bytes.data());
      lengths.push_back(static_cast<int>(bytes.size()));
      formats.push_back(1);
    }
  }
  std::vector<std::string> storage;
  std::vector<Oid> types;
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
};

std::vector<SqlRow> ReadRows(const PGresult* result) {
  std::vector<SqlRow> rows;
  const int columns = PQnfields(result);
  for (int r = 0; r < PQntuples(result); ++r) {
    std::vector<SqlRow::Cell> cells;
    for (int c = 0; c < columns; ++c) {
      if (PQgetisnull(result, r, c)) {
        cells.emplace_back(std::monostate());
        continue;
      }
      const char* data = PQgetvalue(result, r, c);
      const int size = PQgetlength(result, r, c);
      if (PQftype(result, c) == kInt8 && size == sizeof(uint64_t)) {
        uint64_t big_endian = 0;
        std::memcpy(&big_endian, data, sizeof(big_endian));
        cells.emplace_back(static_cast<int64_t>(absl::gntohll(big_endian)));
      } else {
        cells.emplace_back(std::string(data, size));
      }
    }
    rows.emplace_back(std::move(cells));
  }
  return rows;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresDatabase>> PostgresDatabase::Open(
    const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    absl::Status error = absl::UnavailableError(
        absl::StrCat("job store: cannot connect to PostgreSQL: ",
                     conn != nullptr ? PQerrorMessage(conn) : "out of memory"));
    PQfinish(conn);
    return error;
  }
  const std::string where = absl::StrCat(PQhost(conn), ":", PQport(conn), "/", PQdb(conn));
  // Notices (CREATE ... IF NOT EXISTS of what exists) are not errors: keep them off stderr.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<PostgresDatabase>(new PostgresDatabase(where, conn));
}

PostgresDatabase::~PostgresDatabase() { PQfinish(conn_); }

absl::StatusOr<std::vector<SqlRow>> PostgresDatabase::Query(absl::string_view sql,
                                                            absl::Span<const SqlValue> params) {
  if (PQstatus(conn_) != CONNECTION_OK) PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return absl::UnavailableError(
        absl::StrCat(Describe(), ": connection lost: ", PQerrorMessage(conn_)));
  }
  const BinaryParams binary(params);
  const std::string statement(sql);
  PGresult* result = PQexecParams(conn_, statement.c_str(), static_cast<int>(params.size()),
                                  binary.types.data(), binary.values.data(), binary.lengths.data(),
                                  binary.formats.data(), /*resultFormat=*/1);
  const ExecStatusType status = PQresultStatus(result);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    std::vector<SqlRow> rows = ReadRows(result);
    PQclear(result);
    return rows;
  }
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  const std::string message =
      absl::StrCat(Describe(), ": running \"", sql, "\": ", PQresultErrorMessage(result));
  PQclear(result);
  if (state != nullptr && state == kUniqueViolation) return absl::AlreadyExistsError(message);
  if (PQstatus(conn_) != CONNECTION_OK) return absl::UnavailableError(message);
  return absl::InternalError(message);
}

}  // namespace arbor::coordinator
