#include "coordinator/http/json_body.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace arbor::coordinator::http {

using json = nlohmann::ordered_json;

absl::StatusOr<json> ParseJsonBody(absl::string_view body) {
  // Thrown from the parser's callback: the parse stops at the first level too deep, before
  // anything of that depth is built.
  struct TooDeep {};
  const auto bounded = [](int depth, json::parse_event_t event, json&) {
    const bool opens =
        event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= kMaxRequestJsonDepth) throw TooDeep{};
    return true;
  };
  try {
    return json::parse(body.begin(), body.end(), bounded);
  } catch (const TooDeep&) {
    return absl::InvalidArgumentError(absl::StrCat(
        "body: nested deeper than ", kMaxRequestJsonDepth, " levels of objects and arrays"));
  } catch (const json::exception& e) {  // Syntax, bad UTF-8, a number out of range.
    return absl::InvalidArgumentError(absl::StrCat("body: not valid JSON: ", e.what()));
  }
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
