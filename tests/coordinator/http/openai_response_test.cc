#include "coordinator/http/openai_response.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace arbor::coordinator::http {
namespace {

using json = nlohmann::json;

views::FinalToken Tok(int id, const std::string& text, float logprob) {
  views::FinalToken t;
  t.id = id;
  t.text = text;
  t.logprob = logprob;
  t.strategy = v1::STRATEGY_ARGMAX;
  v1::TokenLogprob& alt = t.top.emplace_back();
  alt.set_token_id(id);
  alt.set_logprob(logprob);
  alt.set_text(text);
  v1::TokenLogprob& other = t.top.emplace_back();
  other.set_token_id(id + 1);
  other.set_logprob(logprob - 1);
  other.set_text("z");
  return t;
}

ChoiceResult Choice(const std::string& job, int prompt_tokens, int generated) {
  ChoiceResult r;
  r.job_id = job;
  r.output.text = "hé";
  r.output.tokens = {Tok(1, "h", -0.1f), Tok(2, "é", -0.2f)};
  r.finished.set_reason(v1::FINISH_REASON_MAX_TOKENS);
  r.finished.mutable_usage()->set_prompt_tokens(prompt_tokens);
  r.finished.mutable_usage()->set_generated_tokens(generated);
  r.finished.mutable_usage()->set_explored_tokens(3);
  r.finished.mutable_strategies()->set_argmax(generated);
  return r;
}

TEST(OpenAiResponseTest, ChatCompletionWithLogprobsUsageAndArbor) {
  OpenAiRequest request;
  request.endpoint = Endpoint::kChatCompletions;
  request.n = 2;
  request.logprobs = 1;
  request.token_strategies = true;
  const ResponseContext context{&request, "chatcmpl-a", 1700000000, "m"};
  const json out = json::parse(CompletionJson(context, {Choice("a", 5, 2), Choice("b", 5, 2)}));
  EXPECT_EQ(out["object"], "chat.completion");
  EXPECT_EQ(out["id"], "chatcmpl-a");
  ASSERT_EQ(out["choices"].size(), 2u);
  const json& c = out["choices"][1];
  EXPECT_EQ(c["index"], 1);
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_EQ(c["message"]["content"], "hé");
  EXPECT_EQ(c["finish_reason"], "length");
  ASSERT_EQ(c["logprobs"]["content"].size(), 2u);
  EXPECT_EQ(c["logprobs"]["content"][1]["token"], "é");
  EXPECT_EQ(c["logprobs"]["content"][1]["bytes"], json::array({0xc3, 0xa9}));
  EXPECT_EQ(c["logprobs"]["content"][1]["top_logprobs"].size(), 1u);  // As many as asked.
  EXPECT_EQ(c["arbor"]["job_id"], "b");
  EXPECT_EQ(c["arbor"]["token_strategies"], json::array({"argmax", "argmax"}));
  // n = 2 choices of one prompt: its tokens count once.
  EXPECT_EQ(out["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(out["usage"]["completion_tokens"], 4);
  EXPECT_EQ(out["usage"]["total_tokens"], 9);
  EXPECT_EQ(out["usage"]["arbor"]["explored_tokens"], 6);
  EXPECT_EQ(out["arbor"]["job_ids"], json::array({"a", "b"}));
}

TEST(OpenAiResponseTest, CompletionLogprobsAndChunks) {
  OpenAiRequest request;
  request.endpoint = Endpoint::kCompletions;
  request.logprobs = 2;
  const ResponseContext context{&request, "cmpl-a", 1, "m"};
  const json out = json::parse(CompletionJson(context, {Choice("a", 3, 2)}));
  EXPECT_EQ(out["object"], "text_completion");
  const json& lp = out["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json::array({"h", "é"}));
  EXPECT_EQ(lp["text_offset"], json::array({0, 1}));
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);

  size_t offset = 0;
  views::FinalPiece piece;
  piece.text = "h";
  piece.tokens = {Tok(1, "h", -0.1f)};
  const json chunk = json::parse(ChunkJson(context, 0, "a", piece, nullptr, true, &offset));
  EXPECT_EQ(chunk["choices"][0]["text"], "h");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(offset, 1u);
}

TEST(OpenAiResponseTest, ChatChunksOpenWithTheRole) {
  OpenAiRequest request;
  request.endpoint = Endpoint::kChatCompletions;
  request.include_usage = true;
  const ResponseContext context{&request, "chatcmpl-a", 1, "m"};
  size_t offset = 0;
  const json first = json::parse(ChunkJson(context, 0, "a", {}, nullptr, true, &offset));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["usage"].is_null());
  v1::FinishedEvent finished;
  finished.set_reason(v1::FINISH_REASON_STOP_STRING);
  const json last = json::parse(ChunkJson(context, 0, "a", {}, &finished, false, &offset));
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  v1::Usage usage;
  usage.set_prompt_tokens(4);
  usage.set_generated_tokens(6);
  const json tail = json::parse(UsageChunkJson(context, {usage}));
  EXPECT_TRUE(tail["choices"].empty());
  EXPECT_EQ(tail["usage"]["total_tokens"], 10);
}

TEST(OpenAiResponseTest, ErrorsInOpenAiShape) {
  const json e =
      json::parse(ErrorJson(absl::InvalidArgumentError("messages[1].role: must be user")));
  EXPECT_EQ(e["error"]["param"], "messages[1].role");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_EQ(e["error"]["code"], "invalid_argument");
  EXPECT_TRUE(
      json::parse(ErrorJson(absl::UnavailableError("no worker: try later")))["error"]["param"]
          .is_null());
  EXPECT_EQ(HttpStatus(absl::StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatus(absl::StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatus(absl::StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatus(absl::StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatus(absl::StatusCode::kUnauthenticated), 401);
}

}  // namespace
}  // namespace arbor::coordinator::http
