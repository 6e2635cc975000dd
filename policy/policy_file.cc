#include "policy/policy_file.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "policy/policy_convert.h"

namespace arbor::policy {
namespace {

absl::StatusOr<std::string> ReadPolicyText(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat(path, ": cannot open the policy file"));
  return text;
}

absl::StatusOr<v1::PolicyConfig> ParsePolicyJson(absl::string_view json, absl::string_view source) {
  v1::PolicyConfig policy;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &policy);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not an arbor.v1.PolicyConfig in JSON: ", parsed.ToString()));
  }
  return policy;
}

}  // namespace

absl::StatusOr<v1::PolicyConfig> ReadPolicyFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadPolicyText(path));
  return ParsePolicyJson(text, path);
}

absl::StatusOr<entropix::PolicyConfig> ApplyPolicyJson(absl::string_view json,
                                                       absl::string_view source,
                                                       const entropix::PolicyConfig& base) {
  absl::StatusOr<v1::PolicyConfig> file = ParsePolicyJson(json, source);
  if (!file.ok()) return file.status();
  absl::StatusOr<entropix::PolicyConfig> policy = PolicyFromProto(*file, base);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", policy.status().message()));
  }
  return policy;
}

absl::StatusOr<entropix::PolicyConfig> ApplyPolicyFile(const std::string& path,
                                                       const entropix::PolicyConfig& base) {
  ASSIGN_OR_RETURN(const std::string text, ReadPolicyText(path));
  return ApplyPolicyJson(text, path, base);
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
