#include "policy/policy_file.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "policy/policy_convert.h"

namespace arbor::policy {

absl::StatusOr<v1::PolicyConfig> ReadPolicyFile(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat(path, ": cannot open the policy file"));
  v1::PolicyConfig policy;
  const auto parsed = google::protobuf::util::JsonStringToMessage(*text, &policy);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an arbor.v1.PolicyConfig in JSON: ", parsed.ToString()));
  }
  return policy;
}

absl::StatusOr<entropix::PolicyConfig> ApplyPolicyFile(const std::string& path,
                                                       const entropix::PolicyConfig& base) {
  absl::StatusOr<v1::PolicyConfig> file = ReadPolicyFile(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<entropix::PolicyConfig> policy = PolicyFromProto(*file, base);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", policy.status().message()));
  }
  return policy;
}

absl::Status WritePolicyFile(const v1::PolicyConfig& policy, const std::string& path) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string json;
  const auto printed = google::protobuf::util::MessageToJsonString(policy, &json, options);
  if (!printed.ok()) return absl::InternalError(printed.ToString());
  return base::WriteFileAtomically(path, json);
}

}  // namespace arbor::policy
