#include "policy/policy_file_flag.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, policy_file, "",
          "The server's default policy: a PolicyConfig JSON file (e.g. from `arbor calibrate`) "
          "whose fields replace the built-in defaults; requests and Run items may override any "
          "field. A coordinator lays it over --policy's defaults and, without it, uses a known "
          "--model's fitted thresholds (model/policies/), if any. A coordinator sends its "
          "resolved policy with every Run, so a worker's file matters only for direct Worker "
          "clients: give the coordinator the same file.");

namespace arbor::policy {

std::string DefaultPolicyFileFromFlags() { return absl::GetFlag(FLAGS_policy_file); }

}  // namespace arbor::policy
