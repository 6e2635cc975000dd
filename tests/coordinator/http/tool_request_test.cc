// Tool calling's request side: tools, tool_choice and the tool fields of messages become the
// chat prompt's tools and calls, a forced call's opener and constraint; everything malformed is
// refused naming its field.
#include "coordinator/http/tool_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "coordinator/http/openai_request.h"
#include "nlohmann/json.hpp"

namespace arbor::coordinator::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kWeather[] = R"({"type": "function", "function": {"name": "get_weather",
    "description": "Weather", "parameters": {"type": "object", "properties": {"city":
    {"type": "string"}}, "required": ["city"]}, "strict": true}})";
constexpr char kTime[] = R"({"type": "function", "function": {"name": "get_time"}})";
constexpr char kUser[] = R"("messages": [{"role": "user", "content": "hi"}])";

absl::StatusOr<OpenAiRequest> Chat(const std::string& rest,
                                   model::ToolFormat format = model::ToolFormat::kChatMLToolCall) {
  return ParseOpenAiRequest(absl::StrCat("{", kUser, rest, "}"), Endpoint::kChatCompletions,
                            v1::PolicyConfig(), format);
}

std::string Refusal(const absl::StatusOr<OpenAiRequest>& parsed) {
  EXPECT_FALSE(parsed.ok());
  return std::string(parsed.status().message());
}

TEST(ToolRequestTest, AutoRendersToolsAndConstrainsNothing) {
  absl::StatusOr<OpenAiRequest> r = Chat(absl::StrCat(R"(, "tools": [)", kWeather, "]"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tools.choice, ToolChoice::kAuto);
  ASSERT_EQ(r->choices[0].chat().tools_size(), 1);
  // As the client wrote it, keys in order.
  EXPECT_THAT(r->choices[0].chat().tools(0), StartsWith(R"({"type":"function","function":)"));
  EXPECT_FALSE(r->choices[0].chat().open_tool_call());
  EXPECT_FALSE(r->choices[0].has_constraint());
  EXPECT_TRUE(r->choices[0].stop().stop_strings().empty());
}

TEST(ToolRequestTest, NamedChoiceOpensTheCallAndConstrainsItsObject) {
  absl::StatusOr<OpenAiRequest> r =
      Chat(absl::StrCat(R"(, "tools": [)", kWeather, ",", kTime,
                        R"(], "tool_choice": {"type": "function", "function": {"name":
                        "get_weather"}}, "n": 2)"));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->choices.size(), 2u);
  for (const v1::GenerateRequest& choice : r->choices) {
    EXPECT_TRUE(choice.chat().open_tool_call());
    EXPECT_EQ(choice.constraint().json_schema(),
              R"({"type":"object","properties":{"name":{"const":"get_weather"},"arguments":)"
              R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},)"
              R"("required":["name","arguments"]})");
  }
  // Llama 3.1's calls hold "parameters", and its assistant header is the whole opener.
  r = Chat(absl::StrCat(R"(, "tools": [)", kTime, R"(], "tool_choice": "required")"),
           model::ToolFormat::kLlama3Json);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->choices[0].chat().open_tool_call());
  EXPECT_THAT(r->choices[0].constraint().json_schema(), HasSubstr(R"("parameters":)"));
}

TEST(ToolRequestTest, OneCallInAutoStopsAfterTheFirstBlock) {
  absl::StatusOr<OpenAiRequest> r =
      Chat(absl::StrCat(R"(, "tools": [)", kWeather, R"(], "parallel_tool_calls": false)"));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->choices[0].stop().stop_strings_size(), 1);
  EXPECT_EQ(r->choices[0].stop().stop_strings(0), "</tool_call>");
}

TEST(ToolRequestTest, NoneRendersToolsButReadsNoCalls) {
  absl::StatusOr<OpenAiRequest> r =
      Chat(absl::StrCat(R"(, "tools": [)", kWeather, R"(], "tool_choice": "none")"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->tools.parses_calls());
  EXPECT_EQ(r->choices[0].chat().tools_size(), 1);
}

TEST(ToolRequestTest, MessagesCarryCallsAndResults) {
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"messages": [{"role": "user", "content": "weather?"},
          {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
           "type": "function", "function": {"name": "get_weather",
           "arguments": "{\"city\": \"Paris\"}"}}]},
          {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]})",
      Endpoint::kChatCompletions, v1::PolicyConfig(), model::ToolFormat::kChatMLToolCall);
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::ChatPrompt& chat = r->choices[0].chat();
  ASSERT_EQ(chat.messages_size(), 3);
  ASSERT_EQ(chat.messages(1).tool_calls_size(), 1);
  EXPECT_EQ(chat.messages(1).tool_calls(0).name(), "get_weather");
  EXPECT_EQ(chat.messages(1).tool_calls(0).arguments(), R"({"city": "Paris"})");
  EXPECT_EQ(chat.messages(2).role(), "tool");
  EXPECT_EQ(chat.messages(2).content(), "sunny");
}

TEST(ToolRequestTest, RefusalsNameTheField) {
  const std::string tools = absl::StrCat(R"(, "tools": [)", kWeather, "]");
  EXPECT_THAT(Refusal(Chat(tools, model::ToolFormat::kNone)),
              StartsWith("tools: the served model's chat template has no tool-calling format"));
  EXPECT_THAT(Refusal(Chat(tools + R"(, "tool_choice": {"type": "function", "function":
                                      {"name": "nope"}})")),
              StartsWith("tool_choice.function.name: 'nope' is not among tools (get_weather)"));
  EXPECT_THAT(Refusal(Chat(R"(, "tool_choice": "required")")), StartsWith("tool_choice:"));
  EXPECT_THAT(Refusal(Chat(tools + R"(, "tool_choice": "sometimes")")), StartsWith("tool_choice:"));
  EXPECT_THAT(Refusal(Chat(R"(, "tools": [{"type": "function", "function": {"name": "a b"}}])")),
              StartsWith("tools[0].function.name:"));
  EXPECT_THAT(Refusal(Chat(R"(, "tools": [{"type": "retrieval"}])")), StartsWith("tools[0].type:"));
  EXPECT_THAT(Refusal(Chat(absl::StrCat(R"(, "tools": [)", kTime, ",", kTime, "]"))),
              StartsWith("tools[1].function.name: repeats"));
  EXPECT_THAT(Refusal(Chat(R"(, "tools": [{"type": "function", "function": {"name": "f",
                              "parameters": {"type": "string"}}}])")),
              StartsWith("tools[0].function.parameters:"));
  EXPECT_THAT(Refusal(Chat(R"(, "tools": [{"type": "function", "function": {"name": "f",
                              "parameters": {"type": "object", "properties": {"x":
                              {"type": "array", "uniqueItems": true}}}}}])")),
              AllOf(StartsWith("tools[0].function.parameters:"), HasSubstr("uniqueItems")));
  EXPECT_THAT(Refusal(Chat(R"(, "tools": [{"type": "function", "function": {"name": "f",
                              "extra": 1}}])")),
              StartsWith("tools[0].function.extra: unrecognized"));
  EXPECT_THAT(Refusal(Chat(tools + R"(, "response_format": {"type": "json_object"})")),
              StartsWith("response_format:"));
  EXPECT_THAT(Refusal(ParseOpenAiRequest(R"({"messages": [{"role": "tool", "content": "x"}]})",
                                         Endpoint::kChatCompletions, v1::PolicyConfig())),
              StartsWith("messages[0].tool_call_id: required"));
  EXPECT_THAT(Refusal(ParseOpenAiRequest(
                  R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function",
                      "function": {"name": "f", "arguments": "[1]"}}]}]})",
                  Endpoint::kChatCompletions, v1::PolicyConfig())),
              StartsWith("messages[0].tool_calls[0].function.arguments:"));
  EXPECT_THAT(Refusal(ParseOpenAiRequest(
                  R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})",
                  Endpoint::kChatCompletions, v1::PolicyConfig())),
              StartsWith("messages[0].tool_calls: only for assistant"));
  EXPECT_THAT(Refusal(ParseOpenAiRequest(absl::StrCat(R"({"prompt": "x")", tools, "}"),
                                         Endpoint::kCompletions, v1::PolicyConfig())),
              StartsWith("tools: only /v1/chat/completions"));
}

}  // namespace
}  // namespace arbor::coordinator::http
