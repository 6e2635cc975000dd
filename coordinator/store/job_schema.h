// The arbor_jobs table's shape and how a store gets it: created where missing, and a store made
// by an older coordinator brought up to date in place (the lease columns added, with defaults
// that read as "held by nobody, lease lapsed", so any coordinator takes its unfinished jobs
// over). Safe to run from several coordinators opening one store at once.
#ifndef ARBOR_COORDINATOR_STORE_JOB_SCHEMA_H_
#define ARBOR_COORDINATOR_STORE_JOB_SCHEMA_H_

#include "absl/status/status.h"
#include "coordinator/store/sql_database.h"

namespace arbor::coordinator {

absl::Status EnsureJobSchema(SqlDatabase& db);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_JOB_SCHEMA_H_
