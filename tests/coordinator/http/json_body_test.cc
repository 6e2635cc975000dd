// A replay's body: empty or {"policy": ...}; anything else is refused naming the field, and the
// nesting bound holds as for the OpenAI bodies.
#include "coordinator/http/json_body.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::coordinator::http {
namespace {

using ::testing::HasSubstr;

TEST(ReplayBody, EmptyOrAPolicyChange) {
  for (const char* body : {"", "  \n", "{}"}) {
    absl::StatusOr<arbor::v1::ReplayRequest> request = ParseReplayBody("j7", body);
    ASSERT_TRUE(request.ok()) << request.status();
    EXPECT_EQ(request->job_id(), "j7");
    EXPECT_FALSE(request->has_policy()) << body;
  }
  absl::StatusOr<arbor::v1::ReplayRequest> changed = ParseReplayBody(
      "j7", R"({"policy": {"sampling": {"temperature": 0.5}, "mode": "POLICY_MODE_CANONICAL"}})");
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FLOAT_EQ(changed->policy().sampling().temperature(), 0.5f);
  EXPECT_EQ(changed->policy().mode(), arbor::v1::POLICY_MODE_CANONICAL);
  EXPECT_FALSE(changed->policy().has_branch()) << "only what the body sets";
}

TEST(ReplayBody, RefusesWhatIsNotAPolicyNamingTheField) {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"seed": 3})", "body: unrecognized field 'seed'"},
           {R"({"policy": {"nope": 1}})", "policy: not an arbor.v1.PolicyConfig"},
           {R"({"policy": 4})", "policy: not an arbor.v1.PolicyConfig"},
           {"[1]", "body: must be a JSON object"},
           {"{", "body: not valid JSON"},
           {R"({"policy": )" + deep + "}", "body: nested deeper than 64"}}) {
    absl::StatusOr<arbor::v1::ReplayRequest> request = ParseReplayBody("j7", body);
    ASSERT_FALSE(request.ok()) << body;
    EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(request.status().message()), HasSubstr(message));
  }
}

}  // namespace
}  // namespace arbor::coordinator::http
