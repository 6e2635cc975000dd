// Policy files: an arbor.v1.PolicyConfig as proto3 JSON, the format `arbor calibrate` writes and
// the coordinator, the workers (--policy_file) and `arbor eval` strategies read. Fields left out
// keep the server default, exactly as in a request's policy.
#ifndef ARBOR_POLICY_POLICY_FILE_H_
#define ARBOR_POLICY_POLICY_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/entropix.pb.h"
#include "entropix/policy_config.h"

namespace arbor::policy {

// NOT_FOUND for a missing file; INVALID_ARGUMENT naming the file for malformed JSON or an
// unknown field.
absl::StatusOr<v1::PolicyConfig> ReadPolicyFile(const std::string& path);
// Server defaults from a policy file: `base` with the file's fields applied and validated.
// Errors name the file and, for a bad value, the field ("policy.json: branch.width: ...").
absl::StatusOr<entropix::PolicyConfig> ApplyPolicyFile(const std::string& path,
                                                       const entropix::PolicyConfig& base);
// The same for policy JSON held in memory (a known model's fitted policy, compiled in); errors
// name `source` where ApplyPolicyFile names the file.
absl::StatusOr<entropix::PolicyConfig> ApplyPolicyJson(absl::string_view json,
                                                       absl::string_view source,
                                                       const entropix::PolicyConfig& base);
// Pretty-printed JSON, written atomically (a temporary file renamed over `path`).
absl::Status WritePolicyFile(const v1::PolicyConfig& policy, const std::string& path);

}  // namespace arbor::policy

#endif  // ARBOR_POLICY_POLICY_FILE_H_
