#include "rpc/policy_file.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "rpc/policy_convert.h"

namespace arbor::rpc {

absl::StatusOr<v1::PolicyConfig> ReadPolicyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the policy file"));
  std::stringstream text;
  text << in.rdbuf();
  v1::PolicyConfig policy;
  const auto parsed = google::protobuf::util::JsonStringToMessage(text.str(), &policy);
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
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json;
    if (!out.flush()) return absl::UnavailableError(absl::StrCat(path, ": cannot write"));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat(path, ": cannot replace the file"));
  }
  return absl::OkStatus();
}

}  // namespace arbor::rpc
