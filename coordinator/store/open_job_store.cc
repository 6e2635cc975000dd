#include "coordinator/store/open_job_store.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "coordinator/store/postgres_database.h"
#include "coordinator/store/sql_job_store.h"
#include "coordinator/store/sqlite_database.h"

namespace arbor::coordinator {

absl::StatusOr<std::unique_ptr<JobStore>> OpenJobStore(const std::string& spec,
                                                       LeaseOptions lease) {
  if (spec == "none") return nullptr;
  absl::string_view rest = spec;
  std::unique_ptr<SqlDatabase> db;
  if (absl::ConsumePrefix(&rest, "sqlite:") && !rest.empty()) {
    ASSIGN_OR_RETURN(db, SqliteDatabase::Open(std::string(rest)));
  } else if (absl::ConsumePrefix(&rest, "postgres:")) {
    ASSIGN_OR_RETURN(db, PostgresDatabase::Open(std::string(rest)));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--job_store: '", spec, "' is none of none, sqlite:PATH and postgres:CONNINFO"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SqlJobStore> store,
                   SqlJobStore::Open(std::move(db), std::move(lease)));
  return std::unique_ptr<JobStore>(std::move(store));
}

}  // namespace arbor::coordinator
