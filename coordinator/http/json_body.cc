#include "coordinator/http/json_body.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "grammar/exact_json.h"

namespace arbor::coordinator::http {

using json = nlohmann::ordered_json;

absl::StatusOr<json> ParseJsonBody(absl::string_view body) {
  // The parse stops at the first level too deep, before anything of that depth is built; a
  // number a double cannot hold keeps its digits (a schema's const or enum is generated as
  // written).
  absl::StatusOr<json> parsed = grammar::ParseExactJson(body, kMaxRequestJsonDepth);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("body: ", parsed.status().message()));
  }
  return parsed;
}

absl::StatusOr<arbor::v1::PolicyConfig> PolicyFromJson(const json& value, absl::string_view field) {
  arbor::v1::PolicyConfig policy;
  google::protobuf::util::JsonParseOptions options;  // Unknown fields are errors.
  const auto parsed = google::protobuf::util::JsonStringToMessage(value.dump(), &policy, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": not an arbor.v1.PolicyConfig: ", std::string(parsed.message())));
  }
  return policy;
}

absl::StatusOr<arbor::v1::ReplayRequest> ParseReplayBody(const std::string& job_id,
                                                         absl::string_view body) {
  arbor::v1::ReplayRequest request;
  request.set_job_id(job_id);
  if (absl::StripAsciiWhitespace(body).empty()) return request;
  absl::StatusOr<json> parsed = ParseJsonBody(body);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->is_object()) return absl::InvalidArgumentError("body: must be a JSON object");
  for (const auto& [key, value] : parsed->items()) {
    if (key != "policy") {
      return absl::InvalidArgumentError(
          absl::StrCat("body: unrecognized field '", key, "' (a replay takes only \"policy\")"));
    }
    absl::StatusOr<arbor::v1::PolicyConfig> policy = PolicyFromJson(value, "policy");
    if (!policy.ok()) return policy.status();
    *request.mutable_policy() = *std::move(policy);
  }
  return request;
}

}  // namespace arbor::coordinator::http
