#include "coordinator/http/openai_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "coordinator/http/json_body.h"

namespace arbor::coordinator::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

absl::StatusOr<OpenAiRequest> Chat(const std::string& body) {
  return ParseOpenAiRequest(body, Endpoint::kChatCompletions, v1::PolicyConfig());
}
absl::StatusOr<OpenAiRequest> Completion(const std::string& body) {
  return ParseOpenAiRequest(body, Endpoint::kCompletions, v1::PolicyConfig());
}

// The message of a refused body, which must name the field first.
std::string Refusal(const absl::StatusOr<OpenAiRequest>& parsed) {
  EXPECT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

// OpenAI's penalties and logit_bias, and other servers' repetition_penalty, become the job's
// logit processors; top_k and min_p the sampler's base values (top_k -1: no cut).
TEST(OpenAiRequestTest, PenaltiesBiasAndSamplingExtrasMap) {
  absl::StatusOr<OpenAiRequest> r = Chat(R"({
    "messages": [{"role": "user", "content": "hi"}], "frequency_penalty": 0.5,
    "presence_penalty": -1, "repetition_penalty": 1.3, "logit_bias": {"7": -100, "42": 2.5},
    "top_k": -1, "min_p": 0.05})");
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::GenerateRequest& c = r->choices[0];
  EXPECT_FLOAT_EQ(c.processors().frequency_penalty(), 0.5f);
  EXPECT_FLOAT_EQ(c.processors().presence_penalty(), -1.0f);
  EXPECT_FLOAT_EQ(c.processors().repetition_penalty(), 1.3f);
  ASSERT_EQ(c.processors().logit_bias_size(), 2);
  EXPECT_FLOAT_EQ(c.processors().logit_bias().at(7), -100.0f);
  EXPECT_FLOAT_EQ(c.processors().logit_bias().at(42), 2.5f);
  EXPECT_EQ(c.policy().sampling().top_k(), 1024);
  EXPECT_FLOAT_EQ(c.policy().sampling().min_p(), 0.05f);
  // Neutral values leave the processors unset; greedy still reads (and ignores) top_k and min_p.
  r = Chat(R"({"messages": [{"role": "user", "content": "hi"}], "frequency_penalty": 0,
               "repetition_penalty": 1, "logit_bias": {}, "temperature": 0, "top_k": 3})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->choices[0].processors().ByteSizeLong(), 0u);
}

// arbor.policy_name picks one of the named policies; not with arbor.policy, not unknown.
TEST(OpenAiRequestTest, PolicyByName) {
  const std::string msgs = R"("messages": [{"role": "user", "content": "hi"}])";
  absl::StatusOr<OpenAiRequest> r =
      Chat("{" + msgs + R"(, "arbor": {"policy_name": "cot_decoding"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->choices[0].policy().mode(), v1::POLICY_MODE_TRACE);
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "arbor": {"policy_name": "clever"}})")),
              StartsWith("arbor.policy_name:"));
  EXPECT_THAT(
      Refusal(Chat("{" + msgs + R"(, "arbor": {"policy_name": "greedy", "policy": {"mode": 1}}})")),
      StartsWith("arbor.policy_name:"));
}

TEST(OpenAiRequestTest, ChatMapsEveryField) {
  absl::StatusOr<OpenAiRequest> r = Chat(R"({
    "model": "m", "messages": [{"role": "developer", "content": "be brief"},
                               {"role": "user", "content": [{"type": "text", "text": "hi "},
                                                            {"type": "text", "text": "there"}]}],
    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.8, "seed": 41, "n": 2,
    "stop": ["\n\n", "END"], "logprobs": true, "top_logprobs": 3, "stream": true,
    "stream_options": {"include_usage": true}, "frequency_penalty": 0, "user": "u",
    "arbor": {"policy": {"mode": "POLICY_MODE_SEARCH", "branch": {"width": 3}},
              "token_strategies": true, "client_tag": "t", "ignore_eos": true}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, "m");
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_TRUE(r->token_strategies);
  EXPECT_EQ(r->logprobs, 3);
  ASSERT_EQ(r->choices.size(), 2u);
  for (int j = 0; j < 2; ++j) {
    const v1::GenerateRequest& c = r->choices[j];
    ASSERT_EQ(c.chat().messages_size(), 2);
    EXPECT_EQ(c.chat().messages(0).role(), "system");
    EXPECT_EQ(c.chat().messages(1).content(), "hi there");
    EXPECT_TRUE(c.chat().add_generation_prompt());
    EXPECT_EQ(c.max_tokens(), 7);
    EXPECT_EQ(c.seed(), 41u + j);  // Choice j draws with seed + j.
    EXPECT_FLOAT_EQ(c.policy().sampling().temperature(), 0.5f);
    EXPECT_FLOAT_EQ(c.policy().sampling().top_p(), 0.8f);
    EXPECT_EQ(c.policy().mode(), v1::POLICY_MODE_SEARCH);
    EXPECT_EQ(c.policy().branch().width(), 3);
    EXPECT_EQ(c.stop().stop_strings_size(), 2);
    EXPECT_TRUE(c.stop().ignore_eos());
    EXPECT_EQ(c.top_logprobs(), 3);
    EXPECT_EQ(c.client_tag(), "t");
  }
}

TEST(OpenAiRequestTest, CompletionPromptsAndDefaults) {
  absl::StatusOr<OpenAiRequest> r = Completion(R"({"prompt": "Once"})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->choices.size(), 1u);
  EXPECT_EQ(r->choices[0].text(), "Once");
  EXPECT_EQ(r->choices[0].max_tokens(), 16);  // OpenAI's default for completions.
  EXPECT_EQ(r->choices[0].seed(), 0u);        // The server picks.
  EXPECT_EQ(r->logprobs, -1);
  EXPECT_EQ(r->choices[0].top_logprobs(), 0);

  r = Completion(R"({"prompt": [[1, 2], "b"], "n": 2, "logprobs": 0})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->choices.size(), 4u);  // Prompt-major: p·n + j.
  EXPECT_EQ(r->choices[1].tokens().token_ids_size(), 2);
  EXPECT_EQ(r->choices[2].text(), "b");
  EXPECT_EQ(r->logprobs, 0);
  EXPECT_EQ(r->choices[0].top_logprobs(), 1);  // The token's own text rides with one.

  r = Completion(R"({"prompt": [5, 6, 7]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->choices[0].tokens().token_ids_size(), 3);
}

TEST(OpenAiRequestTest, TemperatureZeroIsGreedy) {
  absl::StatusOr<OpenAiRequest> r =
      Chat(R"({"messages": [{"role": "user", "content": "x"}], "temperature": 0, "seed": 0})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->choices[0].policy().mode(), v1::POLICY_MODE_CANONICAL);
  EXPECT_FLOAT_EQ(r->choices[0].policy().thresholds().lelv_entropy(), 64);
  EXPECT_EQ(r->choices[0].seed(), UINT64_MAX);  // Seed 0 is not "pick one" over HTTP.
  EXPECT_THAT(Refusal(Chat(R"({"messages": [{"role": "user", "content": "x"}],
                               "temperature": 0, "arbor": {"policy": {"branch": {"width": 2}}}})")),
              StartsWith("arbor.policy:"));
}

// A body nested 100,000 levels deep (a few hundred KB, unauthenticated) once crashed the
// coordinator: depth is refused while parsing, and a body exactly as deep as the limit passes
// the parser (to fail later on its fields, not on its depth).
TEST(OpenAiRequestTest, ResponseFormatBecomesTheConstraintWithPropertiesInTheirOrder) {
  const std::string msgs = R"("messages": [{"role": "user", "content": "x"}])";
  absl::StatusOr<OpenAiRequest> r =
      Chat("{" + msgs + R"(, "n": 2, "response_format": {"type": "json_schema", "json_schema": {
        "name": "person", "strict": true, "schema": {"type": "object",
        "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}}})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->choices.size(), 2u);
  for (const arbor::v1::GenerateRequest& choice : r->choices) {
    // The client's order, not the alphabet's: properties are generated in it.
    EXPECT_EQ(choice.constraint().json_schema(),
              R"({"type":"object","properties":{"zeta":{"type":"string"},)"
              R"("alpha":{"type":"integer"}}})");
  }
  r = Completion(R"({"prompt": "x", "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->choices[0].constraint().json_object());
  r = Completion(R"({"prompt": "x", "response_format": {"type": "text"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->choices[0].has_constraint());
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "response_format": {"type": "json_schema",
      "json_schema": {"name": "p", "schema": {"type": "string", "pattern": "(?<=a)b"}}}})")),
              StartsWith("response_format.json_schema.schema: at /pattern: keyword 'pattern' is "
                         "not supported so: lookaround"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "response_format": {"type": "json_schema"}})")),
              StartsWith("response_format.json_schema: required"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "response_format": {"type": "yaml"}})")),
              StartsWith("response_format.type: 'yaml' is not one of"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "response_format": {"type": "json_object",
      "schema": {}}})")),
              StartsWith("response_format.schema: unrecognized"));
}

TEST(OpenAiRequestTest, DeepNestingIsRefusedWhileParsing) {
  // The top object and "arbor" are two levels; the arrays inside policy make up the rest.
  const auto nested = [](int levels) {
    const int arrays = levels - 2;
    return absl::StrCat(R"({"prompt":"hi","arbor":{"policy":)", std::string(arrays, '['),
                        std::string(arrays, ']'), "}}");
  };
  EXPECT_THAT(Refusal(Completion(nested(100000))),
              StartsWith("body: nested deeper than 64 levels"));
  EXPECT_THAT(Refusal(Completion(nested(kMaxRequestJsonDepth + 1))),
              StartsWith("body: nested deeper than 64 levels"));
  EXPECT_THAT(Refusal(Completion(nested(kMaxRequestJsonDepth))), StartsWith("arbor.policy:"));
}

TEST(OpenAiRequestTest, ErrorsNameTheField) {
  const std::string msgs = R"("messages": [{"role": "user", "content": "x"}])";
  EXPECT_THAT(Refusal(Chat("{")), StartsWith("body: not valid JSON"));
  EXPECT_THAT(Refusal(Chat("[]")), StartsWith("body:"));
  EXPECT_THAT(Refusal(Chat("{}")), StartsWith("messages:"));
  EXPECT_THAT(Refusal(Chat(R"({"messages": [{"role": "pirate", "content": "x"}]})")),
              StartsWith("messages[0].role:"));
  EXPECT_THAT(Refusal(Chat(R"({"messages": [{"role": "user"}]})")),
              StartsWith("messages[0].content:"));
  EXPECT_THAT(Refusal(Chat(R"({"messages": [{"role": "user", "content": [{"type": "image"}]}]})")),
              StartsWith("messages[0].content[0]:"));
  // A "type" of another JSON type is refused, not thrown.
  EXPECT_THAT(Refusal(Chat(R"({"messages": [{"role": "user", "content": [{"type": 7}]}]})")),
              StartsWith("messages[0].content[0]:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "response_format": {"type": 5}})")),
              StartsWith("response_format.type:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "max_tokens": "ten"})")), StartsWith("max_tokens:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "max_tokens": 0})")), StartsWith("max_tokens:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "temperature": 3})")), StartsWith("temperature:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "top_p": 0})")), StartsWith("top_p:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "n": 17})")), StartsWith("n:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "stop": [1]})")), StartsWith("stop[0]:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "top_logprobs": 2})")), StartsWith("top_logprobs:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "logprobs": 2})")), StartsWith("logprobs:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "frequency_penalty": 2.5})")),
              StartsWith("frequency_penalty:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "presence_penalty": "high"})")),
              StartsWith("presence_penalty:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "repetition_penalty": 0})")),
              StartsWith("repetition_penalty:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "logit_bias": {"x7": 1}})")),
              StartsWith("logit_bias.x7:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "logit_bias": {"7": 101}})")),
              StartsWith("logit_bias.7:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "logit_bias": [1]})")), StartsWith("logit_bias:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "top_k": -2})")), StartsWith("top_k:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "min_p": 1})")), StartsWith("min_p:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs +
                           R"(, "top_k": 5, "arbor": {"policy": {"sampling": {"top_k": 4}}}})")),
              StartsWith("top_k:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "tools": [{}]})")), StartsWith("tools:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "temprature": 1})")),
              AllOf(StartsWith("temprature:"), HasSubstr("unrecognized")));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "arbor": {"policy": {"nope": 1}}})")),
              StartsWith("arbor.policy:"));
  EXPECT_THAT(Refusal(Chat("{" + msgs + R"(, "arbor": {"polcy": {}}})")),
              StartsWith("arbor.polcy:"));
  EXPECT_THAT(Refusal(Completion(R"({"prompt": []})")), StartsWith("prompt:"));
  EXPECT_THAT(Refusal(Completion(R"({"prompt": [[1], [-1]]})")), StartsWith("prompt[1][0]:"));
  EXPECT_THAT(Refusal(Completion(R"({"prompt": "x", "echo": true})")), StartsWith("echo:"));
  EXPECT_THAT(Refusal(Completion(R"({"prompt": ["a","b","c","d","e"], "n": 4})")),
              StartsWith("n:"));
  // Non-UTF-8 inside a string is a parse error, not a crash.
  EXPECT_THAT(Refusal(Completion("{\"prompt\": \"\xff\xfe\"}")), StartsWith("body:"));
}

}  // namespace
}  // namespace arbor::coordinator::http
