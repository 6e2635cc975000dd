// Request bodies as JSON (the OpenAI endpoints', a replay's): parsed with a bound on nesting that
// holds while parsing, and the Arbor messages a body may embed.
#ifndef ARBOR_COORDINATOR_HTTP_JSON_BODY_H_
#define ARBOR_COORDINATOR_HTTP_JSON_BODY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/generation.pb.h"
#include "nlohmann/json.hpp"

namespace arbor::coordinator::http {

// Nesting levels (objects and arrays) a body may have. No request needs more than a handful;
// the bound is enforced while parsing, because deeper values are handled by recursion later
// (dumping arbor.policy, destroying the tree), and 100,000 levels overflowed the stack.
inline constexpr int kMaxRequestJsonDepth = 64;

// The body as JSON; INVALID_ARGUMENT naming `body` when it is not JSON or nests deeper than
// kMaxRequestJsonDepth (found before anything of that depth is built).
absl::StatusOr<nlohmann::ordered_json> ParseJsonBody(absl::string_view body);

// `value` as an arbor.v1.PolicyConfig (proto3 JSON; unknown fields are errors); INVALID_ARGUMENT
// naming `field`.
absl::StatusOr<arbor::v1::PolicyConfig> PolicyFromJson(const nlohmann::ordered_json& value,
                                                       absl::string_view field);

// POST /v1/jobs/{id}/replay's body: empty (the job as it ran) or {"policy": PolicyConfig}, the
// fields that replace the job's own. INVALID_ARGUMENT naming the field.
absl::StatusOr<arbor::v1::ReplayRequest> ParseReplayBody(const std::string& job_id,
                                                         absl::string_view body);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_JSON_BODY_H_
