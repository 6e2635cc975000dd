// SqlDatabase over one PostgreSQL connection (libpq): the job store shared by coordinators
// that run on several machines, or kept on a managed server. Parameters and results travel in
// binary, so byte columns need no escaping. A lost connection is reopened once per statement
// before the statement fails UNAVAILABLE.
#ifndef ARBOR_COORDINATOR_STORE_POSTGRES_DATABASE_H_
#define ARBOR_COORDINATOR_STORE_POSTGRES_DATABASE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/store/sql_database.h"

struct pg_conn;

namespace arbor::coordinator {

class PostgresDatabase final : public SqlDatabase {
 public:
  // Connects with `conninfo` ("host=/tmp port=5432 dbname=arbor" or a postgresql:// URI).
  // UNAVAILABLE naming the server when it cannot connect.
  static absl::StatusOr<std::unique_ptr<PostgresDatabase>> Open(const std::string& conninfo);
  ~PostgresDatabase() override;

  absl::StatusOr<std::vector<SqlRow>> Query(absl::string_view sql,
                                            absl::Span<const SqlValue> params) override;
  absl::string_view BlobType() const override { return "BYTEA"; }
  std::string Describe() const override { return "PostgreSQL job store " + where_; }

 private:
  PostgresDatabase(std::string where, pg_conn* conn) : where_(std::move(where)), conn_(conn) {}

  const std::string where_;  // Host, port and database: the connection string less secrets.
  pg_conn* const conn_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_POSTGRES_DATABASE_H_
