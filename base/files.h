// Whole-file reads and crash-safe whole-file writes: port files, checkpoints made for tests,
// policy files, eval results and reports are all written through here, so a reader never sees
// a half-written file.
#ifndef ARBOR_BASE_FILES_H_
#define ARBOR_BASE_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace arbor::base {

// Reads a whole file, e.g. a port file written by a server; NOT_FOUND when absent.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path` atomically: into a temporary file beside it, then renamed over
// it. On failure the temporary is removed, `path` is untouched, and the status names `path`
// and the system's reason.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace arbor::base

#endif  // ARBOR_BASE_FILES_H_
