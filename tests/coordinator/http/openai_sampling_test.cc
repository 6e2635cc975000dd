// What OpenAI's temperature, top_p, top_k, min_p, n and seed become under each kind of policy
// (coordinator/http/openai_sampling.h), through the request parser as the gateway runs it: a
// TRACE policy (the server's default or named by the request) samples its traces at the
// temperature and answers n with ranks of one search; a preset's values give way to the
// request's fields; only a field given twice is refused, naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/http/openai_request.h"
#include "policy/policy_presets.h"

namespace arbor::coordinator::http {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const char kMessages[] = R"("messages": [{"role": "user", "content": "hi"}])";

absl::StatusOr<OpenAiRequest> Chat(const std::string& fields,
                                   const v1::PolicyConfig& server_policy = v1::PolicyConfig()) {
  return ParseOpenAiRequest(absl::StrCat("{", kMessages, ", ", fields, "}"),
                            Endpoint::kChatCompletions, server_policy);
}

std::string Refusal(const absl::StatusOr<OpenAiRequest>& parsed) {
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

// Under the server's CoT-decoding, n = 2 is one search run twice with one seed, its floor lifted
// so that it opens two traces, the second choice committing the trace ranked 2; temperature is
// the traces' own, top_p shapes their draws.
TEST(OpenAiSamplingTest, UnderATraceDefaultNIsRanksOfOneSampledSearch) {
  const v1::PolicyConfig cot = policy::CotDecodingPolicy();
  absl::StatusOr<OpenAiRequest> r =
      Chat(R"("n": 2, "temperature": 0.9, "top_p": 0.8, "top_k": 7, "seed": 5)", cot);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->choices.size(), 2u);
  for (int j = 0; j < 2; ++j) {
    const v1::PolicyConfig& p = r->choices[j].policy();
    EXPECT_EQ(r->choices[j].seed(), 5u) << "one search: one seed";
    EXPECT_FLOAT_EQ(p.trace().temperature(), 0.9f);
    EXPECT_FALSE(p.sampling().has_temperature()) << "unused by TRACE";
    EXPECT_FLOAT_EQ(p.sampling().top_p(), 0.8f);
    EXPECT_EQ(p.sampling().top_k(), 7);
    EXPECT_EQ(p.trace().commit_rank(), j);
  }
  EXPECT_FALSE(r->choices[0].policy().trace().has_commit_rank()) << "choice 0: the best trace";
  for (const auto& choice : r->choices) {
    EXPECT_TRUE(choice.policy().trace().has_candidate_min_p());
    EXPECT_EQ(choice.policy().trace().candidate_min_p(), 0.0f) << "n traces open, not one";
  }
  // A floor the request asks for stays.
  r = Chat(R"("n": 2, "arbor": {"policy": {"trace": {"candidateMinP": 0.3}}})", cot);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FLOAT_EQ(r->choices[1].policy().trace().candidate_min_p(), 0.3f);

  // Without a seed the choices still share one, drawn for them (0 would give each its own).
  r = Chat(R"("n": 3)", cot);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->choices[0].seed(), 0u);
  EXPECT_EQ(r->choices[1].seed(), r->choices[0].seed());
  EXPECT_EQ(r->choices[2].seed(), r->choices[0].seed());
  r = Chat(R"("n": 1)", cot);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->choices[0].seed(), 0u) << "one choice: the server picks, as before";
  EXPECT_FALSE(r->choices[0].policy().trace().has_candidate_min_p()) << "the server's floor";

  // Temperature 0 keeps CoT-decoding, with greedy traces; it does not switch to greedy decoding.
  r = Chat(R"("temperature": 0)", cot);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->choices[0].policy().has_mode());
  EXPECT_EQ(r->choices[0].policy().trace().temperature(), 0.0f);
}

// CoT-decoding opens one fork of trace.width 3: a fourth best trace does not exist.
TEST(OpenAiSamplingTest, NBeyondTheTracesAPolicyOpensIsRefused) {
  const v1::PolicyConfig cot = policy::CotDecodingPolicy();
  EXPECT_THAT(Refusal(Chat(R"("n": 4)", cot)),
              AllOf(StartsWith("n: "), HasSubstr("at most 3 (trace.width 3, max_depth 1"),
                    HasSubstr("lower n")));
  EXPECT_TRUE(Chat(R"("n": 4, "arbor": {"policy": {"trace": {"width": 4}}})", cot).ok());
  EXPECT_THAT(Refusal(Chat(R"("n": 7, "arbor": {"policy_name": "eager"})")),
              AllOf(StartsWith("n: "), HasSubstr("max_traces 6")));
  // Outside TRACE, n is independent draws: seed + j, no rank.
  absl::StatusOr<OpenAiRequest> r = Chat(R"("n": 4, "seed": 10)");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->choices[3].seed(), 13u);
  EXPECT_FALSE(r->choices[3].policy().trace().has_commit_rank());
}

// A preset gives defaults: the request's fields replace them, temperature 0 included.
TEST(OpenAiSamplingTest, APresetTakesTheRequestsFields) {
  absl::StatusOr<OpenAiRequest> r =
      Chat(R"("temperature": 1.3, "top_k": 5, "arbor": {"policy_name": "sample"})");
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::PolicyConfig& sample = r->choices[0].policy();
  EXPECT_FLOAT_EQ(sample.sampling().temperature(), 1.3f);
  EXPECT_EQ(sample.sampling().top_k(), 5);
  EXPECT_FLOAT_EQ(sample.sampling().min_p(), 0.05f) << "the preset's own, not given";
  EXPECT_EQ(sample.adaptive().n_samples(), 1) << "still plain sampling";

  r = Chat(R"("temperature": 0.6, "arbor": {"policy_name": "deepconf"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FLOAT_EQ(r->choices[0].policy().trace().temperature(), 0.6f) << "not the preset's 0.2";

  r = Chat(R"("temperature": 0, "arbor": {"policy_name": "cot_decoding"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->choices[0].policy().mode(), v1::POLICY_MODE_TRACE);

  r = Chat(R"("temperature": 0, "arbor": {"policy_name": "search"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->choices[0].policy().thresholds().lelv_entropy(), 64) << "greedy decoding";
}

// A field given the OpenAI way and in arbor.policy is refused, naming what to drop.
TEST(OpenAiSamplingTest, OnlyAFieldGivenTwiceConflicts) {
  EXPECT_THAT(Refusal(Chat(R"("temperature": 0.7, "arbor": {"policy": {
                                "mode": "POLICY_MODE_TRACE", "trace": {"temperature": 0.5}}})")),
              AllOf(StartsWith("temperature: "), HasSubstr("arbor.policy.trace.temperature"),
                    HasSubstr("drop one")));
  EXPECT_THAT(Refusal(Chat(R"("temperature": 0.7, "arbor": {"policy": {
                                "sampling": {"temperature": 0.5}}})")),
              AllOf(StartsWith("temperature: "), HasSubstr("arbor.policy.sampling.temperature")));
  EXPECT_THAT(Refusal(Chat(R"("min_p": 0.1, "arbor": {"policy": {"sampling": {"min_p": 0.2}}})")),
              StartsWith("min_p: "));
  EXPECT_THAT(Refusal(Chat(R"("temperature": 0.8, "arbor": {"policy_name": "greedy"})")),
              AllOf(StartsWith("temperature: "), HasSubstr("drop temperature")));
  EXPECT_TRUE(Chat(R"("temperature": 0, "arbor": {"policy_name": "greedy"})").ok());
  // Different fields do not conflict: a TRACE policy written out takes the OpenAI temperature.
  absl::StatusOr<OpenAiRequest> r = Chat(R"("temperature": 0.7, "arbor": {"policy": {
                                "mode": "POLICY_MODE_TRACE", "trace": {"width": 2}}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FLOAT_EQ(r->choices[0].policy().trace().temperature(), 0.7f);
  EXPECT_EQ(r->choices[0].policy().trace().width(), 2);
}

}  // namespace
}  // namespace arbor::coordinator::http
