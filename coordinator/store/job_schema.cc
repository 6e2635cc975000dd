#include "coordinator/store/job_schema.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"

namespace arbor::coordinator {
namespace {

// The table as the first stores had it; later columns are added below, to new and old alike.
constexpr const char* kTable[] = {
    "CREATE TABLE IF NOT EXISTS arbor_jobs ("
    " job_id TEXT PRIMARY KEY, owner TEXT NOT NULL, client_tag TEXT NOT NULL,"
    " model TEXT NOT NULL, model_fingerprint TEXT NOT NULL, created_ms BIGINT NOT NULL,"
    " deadline_ms BIGINT NOT NULL, state BIGINT NOT NULL, finished_ms BIGINT NOT NULL,"
    " bytes BIGINT NOT NULL, request $BLOB NOT NULL, job $BLOB, events $BLOB, tree $BLOB)",
    "CREATE INDEX IF NOT EXISTS arbor_jobs_created ON arbor_jobs (created_ms)",
    "CREATE INDEX IF NOT EXISTS arbor_jobs_finished ON arbor_jobs (finished_ms)",
};

struct Column {
  const char* name;
  const char* definition;
};

// The lease (job_store.h's JobLease). The defaults describe a row accepted before leases:
// nobody holds it and its lease has lapsed. The holder's address rides in each row rather than
// in a table of coordinators: the statements that write a lease (accept, takeover, renewal)
// write it too, so a renewal stays one statement, and a Watch reads it with the job.
constexpr Column kLeaseColumns[] = {
    {"coordinator", "TEXT NOT NULL DEFAULT ''"},
    {"epoch", "BIGINT NOT NULL DEFAULT 0"},
    {"lease_until_ms", "BIGINT NOT NULL DEFAULT 0"},
    {"cancel_requested", "BIGINT NOT NULL DEFAULT 0"},
    {"coordinator_address", "TEXT NOT NULL DEFAULT ''"},
};

// Renewal finds a coordinator's jobs, takeover the lapsed ones, among the unfinished.
constexpr char kLeaseIndex[] =
    "CREATE INDEX IF NOT EXISTS arbor_jobs_lease ON arbor_jobs (state, coordinator)";

bool HasColumn(SqlDatabase& db, const char* name) {
  return db.Query(absl::StrCat("SELECT ", name, " FROM arbor_jobs LIMIT 0"), {}).ok();
}

// Neither SQLite nor older PostgreSQL know ADD COLUMN IF NOT EXISTS: the column is probed for,
// and an ALTER that loses a race with another coordinator's is fine once the column is there.
absl::Status AddColumn(SqlDatabase& db, const Column& column) {
  if (HasColumn(db, column.name)) return absl::OkStatus();
  const absl::Status added = db.Query(absl::StrCat("ALTER TABLE arbor_jobs ADD COLUMN ",
                                                   column.name, " ", column.definition),
                                      {})
                                 .status();
  if (added.ok() || HasColumn(db, column.name)) return absl::OkStatus();
  return absl::Status(added.code(),
                      absl::StrCat("job store: cannot add the lease column ", column.name,
                                   " to an older store (does the connection's user own the "
                                   "arbor_jobs table?): ",
                                   added.message()));
}

}  // namespace

absl::Status EnsureJobSchema(SqlDatabase& db) {
  for (const char* statement : kTable) {
    const std::string sql = absl::StrReplaceAll(statement, {{"$BLOB", db.BlobType()}});
    RETURN_IF_ERROR(db.Query(sql, {}).status());
  }
  for (const Column& column : kLeaseColumns) RETURN_IF_ERROR(AddColumn(db, column));
  return db.Query(kLeaseIndex, {}).status();
}

}  // namespace arbor::coordinator
