// Reading calls out of generated text: ChatML <tool_call> blocks and Llama 3.1's JSON answer,
// whole or split at every byte (a stream's final pieces), give the same content and calls; a
// call that does not parse, names no tool or whose arguments fail the schema stays content;
// the markup never reaches content.
#include "coordinator/http/tool_calls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/http/openai_request.h"

namespace arbor::coordinator::http {
namespace {

ToolRequest Tools(model::ToolFormat format, const std::string& choice = "\"auto\"") {
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"messages": [{"role": "user", "content": "hi"}], "tools": [
          {"type": "function", "function": {"name": "get_weather", "parameters":
           {"type": "object", "properties": {"city": {"type": "string"},
            "days": {"type": "integer"}}, "required": ["city"]}}},
          {"type": "function", "function": {"name": "get_time"}}], "tool_choice": )" +
          choice + "}",
      Endpoint::kChatCompletions, v1::PolicyConfig(), format);
  EXPECT_TRUE(r.ok()) << r.status();
  return r->tools;
}

struct Read {
  std::string content;
  std::vector<ReturnedToolCall> calls;
};

// `text` read in pieces of `piece` bytes (0: whole).
Read ReadAll(const ToolRequest& tools, const std::string& text, size_t piece) {
  ToolCallReader reader(&tools, "j1");
  Read out;
  auto take = [&](ToolCallReader::Output o) {
    out.content += o.content;
    out.calls.insert(out.calls.end(), o.calls.begin(), o.calls.end());
  };
  if (piece == 0) piece = text.size() + 1;
  for (size_t at = 0; at < text.size(); at += piece) take(reader.Push(text.substr(at, piece)));
  take(reader.Finish());
  return out;
}

// Every way of splitting `text` reads as the whole does.
Read ReadEveryWay(const ToolRequest& tools, const std::string& text) {
  const Read whole = ReadAll(tools, text, 0);
  for (size_t piece = 1; piece <= 13; ++piece) {
    const Read split = ReadAll(tools, text, piece);
    EXPECT_EQ(split.content, whole.content) << "pieces of " << piece;
    EXPECT_EQ(split.calls.size(), whole.calls.size()) << "pieces of " << piece;
    for (size_t i = 0; i < split.calls.size() && i < whole.calls.size(); ++i) {
      EXPECT_EQ(split.calls[i].arguments, whole.calls[i].arguments);
      EXPECT_EQ(split.calls[i].id, whole.calls[i].id);
    }
  }
  return whole;
}

TEST(ToolCallReaderTest, ChatMLBlocksBecomeCallsAndTheRestContent) {
  const ToolRequest tools = Tools(model::ToolFormat::kChatMLToolCall);
  const Read read = ReadEveryWay(
      tools,
      "Let me check <tool\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
      "\"arguments\": {}}\n</tool_call>\n");
  EXPECT_EQ(read.content, "Let me check <tool");
  ASSERT_EQ(read.calls.size(), 2u);
  EXPECT_EQ(read.calls[0].name, "get_weather");
  EXPECT_EQ(read.calls[0].arguments, R"({"city":"Paris","days":2})");
  EXPECT_EQ(read.calls[0].id, "call_j1_0");
  EXPECT_EQ(read.calls[0].index, 0);
  EXPECT_EQ(read.calls[1].name, "get_time");
  EXPECT_EQ(read.calls[1].arguments, "{}");
  EXPECT_EQ(read.calls[1].index, 1);
}

TEST(ToolCallReaderTest, InvalidCallsStayContent) {
  const ToolRequest tools = Tools(model::ToolFormat::kChatMLToolCall);
  for (const std::string block : {
           R"({"name": "get_weather", "arguments": {"days": 2}})",  // Lacks a required property.
           R"({"name": "get_weather", "arguments": {"city": 3}})",  // Wrong type.
           R"({"name": "get_weather", "arguments": {"city": "x", "zip": 1}})",  // Undeclared.
           R"({"name": "nope", "arguments": {}})",                              // No such tool.
           R"({"name": "get_time", "arguments": "{}"})",                        // Not an object.
           R"({"name": "get_time", "arguments": {})",                           // Not JSON.
       }) {
    const std::string text = "A\n<tool_call>\n" + block + "\n</tool_call>";
    const Read read = ReadEveryWay(tools, text);
    EXPECT_TRUE(read.calls.empty()) << block;
    EXPECT_EQ(read.content, text) << block;
  }
  // An unclosed block is a call when it is complete (a stop at the closer), content otherwise.
  EXPECT_EQ(ReadEveryWay(tools, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n")
                .calls.size(),
            1u);
  EXPECT_EQ(ReadEveryWay(tools, "<tool_call>\n{\"name\": \"get_ti").content,
            "<tool_call>\n{\"name\": \"get_ti");
}

TEST(ToolCallReaderTest, ForcedChatMLCallStartsInsideTheBlock) {
  const ToolRequest tools = Tools(model::ToolFormat::kChatMLToolCall, "\"required\"");
  const Read read = ReadEveryWay(tools, R"({"name":"get_weather","arguments":{"city":"Oslo"}})");
  EXPECT_EQ(read.content, "");
  ASSERT_EQ(read.calls.size(), 1u);
  EXPECT_EQ(read.calls[0].arguments, R"({"city":"Oslo"})");
  // Cut short (max_tokens): no call, the text as content, without the prompt's opener.
  EXPECT_EQ(ReadEveryWay(tools, R"({"name":"get_weather","argu)").content,
            R"({"name":"get_weather","argu)");
}

TEST(ToolCallReaderTest, Llama3WholeAnswerIsTheCall) {
  const ToolRequest tools = Tools(model::ToolFormat::kLlama3Json);
  Read read = ReadEveryWay(
      tools, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}");
  EXPECT_EQ(read.content, "");
  ASSERT_EQ(read.calls.size(), 1u);
  EXPECT_EQ(read.calls[0].arguments, R"({"city":"Rome"})");
  read = ReadEveryWay(tools, " {\"name\": \"get_time\", \"parameters\": {}}");
  ASSERT_EQ(read.calls.size(), 1u);
  // Text, or JSON that is no call, is content.
  EXPECT_EQ(ReadEveryWay(tools, "It is sunny.").content, "It is sunny.");
  EXPECT_EQ(ReadEveryWay(tools, "{\"a\": 1}").content, "{\"a\": 1}");
  EXPECT_TRUE(ReadEveryWay(tools, "{\"a\": 1}").calls.empty());
}

}  // namespace
}  // namespace arbor::coordinator::http
