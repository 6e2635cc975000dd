// The job store that --job_store names: "sqlite:PATH" (one file, created if missing),
// "postgres:CONNINFO" (a libpq connection string or URI) or "none" (jobs live in memory only).
#ifndef ARBOR_COORDINATOR_STORE_OPEN_JOB_STORE_H_
#define ARBOR_COORDINATOR_STORE_OPEN_JOB_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/store/job_store.h"

namespace arbor::coordinator {

// Null for "none". The store holds jobs under `lease` (job_store.h). INVALID_ARGUMENT for an
// unknown kind or a lease without a coordinator id; the back end's error (UNAVAILABLE naming
// the file or server) when it cannot be opened.
absl::StatusOr<std::unique_ptr<JobStore>> OpenJobStore(const std::string& spec, LeaseOptions lease);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_OPEN_JOB_STORE_H_
