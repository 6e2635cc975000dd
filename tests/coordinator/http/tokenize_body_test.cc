// POST /tokenize and /detokenize bodies in vLLM's shapes, and their answers.
#include "coordinator/http/tokenize_body.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace arbor::coordinator::http {
namespace {

void ExpectInvalid(const absl::Status& status, const std::string& starts_with) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(std::string(status.message()).rfind(starts_with, 0), 0u) << status;
}

TEST(TokenizeBodyTest, TextPrompt) {
  absl::StatusOr<TokenizeBody> body = ParseTokenizeBody(R"({"model": "m", "prompt": "Hi"})");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->model, "m");
  EXPECT_EQ(body->prompt.text(), "Hi");
}

TEST(TokenizeBodyTest, ChatOpensAnAssistantTurnUnlessTold) {
  absl::StatusOr<TokenizeBody> body =
      ParseTokenizeBody(R"({"messages": [{"role": "user", "content": "Hi"}]})");
  ASSERT_TRUE(body.ok()) << body.status();
  ASSERT_EQ(body->prompt.chat().messages_size(), 1);
  EXPECT_EQ(body->prompt.chat().messages(0).role(), "user");
  EXPECT_EQ(body->prompt.chat().messages(0).content(), "Hi");
  EXPECT_TRUE(body->prompt.chat().add_generation_prompt());
  body = ParseTokenizeBody(
      R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false})");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_FALSE(body->prompt.chat().add_generation_prompt());
}

TEST(TokenizeBodyTest, ErrorsNameTheField) {
  ExpectInvalid(ParseTokenizeBody("[1]").status(), "body: must be a JSON object");
  ExpectInvalid(ParseTokenizeBody("{").status(), "body: ");
  ExpectInvalid(ParseTokenizeBody(R"({"model": "m"})").status(), "body: give either prompt");
  ExpectInvalid(ParseTokenizeBody(R"({"prompt": "a", "messages": []})").status(),
                "body: give either prompt");
  ExpectInvalid(ParseTokenizeBody(R"({"prompt": 3})").status(), "prompt: must be a string");
  ExpectInvalid(ParseTokenizeBody(R"({"prompt": "a", "echo": true})").status(),
                "body: unrecognized field 'echo'");
  ExpectInvalid(ParseTokenizeBody(R"({"prompt": "a", "add_generation_prompt": true})").status(),
                "add_generation_prompt: only with messages");
  ExpectInvalid(ParseTokenizeBody(R"({"messages": [{"role": "user", "content": [1]}]})").status(),
                "messages[0].content: must be a string");
  ExpectInvalid(ParseTokenizeBody(R"({"messages": [{"role": "user", "name": "x"}]})").status(),
                "messages[0].name: unrecognized field");
}

TEST(DetokenizeBodyTest, TokensAndErrors) {
  absl::StatusOr<DetokenizeBody> body = ParseDetokenizeBody(R"({"model": "m", "tokens": [1, 2]})");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->model, "m");
  ASSERT_EQ(body->tokens.token_ids_size(), 2);
  EXPECT_EQ(body->tokens.token_ids(1), 2);
  ExpectInvalid(ParseDetokenizeBody(R"({"model": "m"})").status(), "tokens: required");
  ExpectInvalid(ParseDetokenizeBody(R"({"tokens": [1, -1]})").status(), "tokens[1]: ");
  ExpectInvalid(ParseDetokenizeBody(R"({"tokens": [1.5]})").status(), "tokens[0]: ");
  ExpectInvalid(ParseDetokenizeBody(R"({"tokens": [4294967296]})").status(), "tokens[0]: ");
  ExpectInvalid(ParseDetokenizeBody(R"({"tokens": "1 2"})").status(), "tokens: must be an array");
  ExpectInvalid(ParseDetokenizeBody(R"({"tokens": [], "prompt": "x"})").status(),
                "body: unrecognized field 'prompt'");
}

TEST(TokenizeAnswerTest, VllmShapes) {
  arbor::v1::TokenizeResponse tokens;
  tokens.add_token_ids(5);
  tokens.add_token_ids(9);
  tokens.set_max_context(2048);
  EXPECT_EQ(nlohmann::json::parse(TokenizeAnswer(tokens)),
            nlohmann::json::parse(R"({"tokens": [5, 9], "count": 2, "max_model_len": 2048})"));
  arbor::v1::DetokenizeResponse text;
  text.set_text("Hi \"you\"");
  EXPECT_EQ(nlohmann::json::parse(DetokenizeAnswer(text))["prompt"], "Hi \"you\"");
}

}  // namespace
}  // namespace arbor::coordinator::http
