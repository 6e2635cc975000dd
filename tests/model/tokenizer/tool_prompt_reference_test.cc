// Tool calling rendered as the models' own templates render it: conversations with tools (nested
// parameter schemas, non-ASCII text, numbers of every kind), assistant turns with calls, "tool"
// results (consecutive ones, which Qwen2.5 merges into one user turn) and a late system message
// give, with Arbor's C++ rendering, the ids of the text the Jinja template renders
// (tests/model/tokenizer/chat_template_reference.py, jinja2 set up as transformers sets it up).
// Qwen2.5's template is the reference for every ChatML template: SmolLM2's and Qwen2's own
// templates have no tool branch, and Arbor shows them tools in Qwen2.5's form, so their
// rendering of a conversation that opens with a system message equals Qwen2.5's. Llama 3.1 and
// 3.2 are compared with their own templates, refusals included (several calls in one turn, tools
// without a first user message). Templates without a tool format (Llama 3.0, Mistral) refuse
// tools.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/files.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/support/python_reference.h"

namespace arbor::model {
namespace {

using json = nlohmann::ordered_json;

constexpr char kTemplates[] = ARBOR_SOURCE_DIR "/tests/model/data/chat_templates.json";

json Tool(const std::string& name, const std::string& description, json parameters) {
  return {{"type", "function"},
          {"function",
           {{"name", name}, {"description", description}, {"parameters", std::move(parameters)}}}};
}

json Tools() {
  return json::array(
      {Tool("get_weather", "Current weather for a city — in °C.",
            {{"type", "object"},
             {"properties",
              {{"city", {{"type", "string"}, {"description", "City name, e.g. Zürich"}}},
               {"unit", {{"type", "string"}, {"enum", {"celsius", "fahrenheit"}}}}}},
             {"required", {"city"}}}),
       Tool("add", "Adds numbers.",
            {{"type", "object"},
             {"properties",
              {{"xs", {{"type", "array"}, {"items", {{"type", "number"}}}, {"minItems", 1}}},
               {"scale", {{"type", "number"}, {"default", 0.5}}},
               {"limit", {{"type", "integer"}, {"default", -3}}},
               {"extra", {{"type", "object"}, {"properties", json::object()}}},
               {"flag", {{"type", "boolean"}, {"default", false}}},
               {"none", {{"type", "null"}}}}},
             {"required", json::array()}})});
}

json Call(const std::string& name, json arguments) {
  return {{"type", "function"},
          {"function", {{"name", name}, {"arguments", std::move(arguments)}}}};
}

json Message(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

json CallMessage(const std::string& content, json calls) {
  return {{"role", "assistant"}, {"content", content}, {"tool_calls", std::move(calls)}};
}

struct Case {
  json messages;
  bool tools = true;
  bool generation_prompt = true;
};

std::vector<Case> Cases() {
  const json weather = Call("get_weather", {{"city", "Paris"}, {"unit", "celsius"}});
  const json add = Call("add", {{"xs", {1, 2.5, -0.125, 1e20}}, {"flag", true}});
  return {
      {{Message("system", "You are terse."), Message("user", "Weather in Paris?")}},
      {{Message("system", "Be kind."), Message("user", "  Weather in Paris?  "),
        CallMessage("", {weather}), Message("tool", "{\"temp\": 21, \"sky\": \"clear ☀\"}")}},
      {{Message("system", "S"), Message("user", "Weather in Paris, and 1+2.5?"),
        CallMessage("Let me check.", {weather, add}), Message("tool", "21 degrees"),
        Message("tool", "3.5"), Message("assistant", "21 °C; 3.5."), Message("user", "Thanks")},
       true,
       false},
      {{Message("system", "S"), Message("user", "Add"), CallMessage("", {add}),
        Message("tool", "ok"), Message("system", "a late system message"),
        Message("user", "again")}},
      {{Message("system", "No tools given"), Message("user", "Weather?"),
        CallMessage("", {weather}), Message("tool", "sunny")},
       false},
      {{Message("system", "Only a system message")}},
      {{Message("user", "No system message"), CallMessage("", {weather}), Message("tool", "rain")}},
  };
}

std::vector<ChatMessage> ToMessages(const json& messages) {
  std::vector<ChatMessage> out;
  for (const json& m : messages) {
    ChatMessage& message = out.emplace_back();
    message.role = m["role"];
    message.content = m["content"];
    if (!m.contains("tool_calls")) continue;
    for (const json& call : m["tool_calls"]) {
      message.tool_calls.push_back(
          {call["function"]["name"], call["function"]["arguments"].dump()});
    }
  }
  return out;
}

class ToolPromptReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto trained = TrainByteLevelBpe(
        BuiltinCorpus(), {800,
                          {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                           "<|eot_id|>", "<|im_start|>", "<|im_end|>", "<s>", "</s>"}});
    ASSERT_TRUE(trained.ok()) << trained.status();
    tokenizer_ = Tokenizer::FromJson(*trained).value().release();
    templates_ = new json(json::parse(base::ReadFile(kTemplates).value()));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete templates_;
  }
  static const json& Template(const std::string& name) {
    for (const json& t : (*templates_)["templates"]) {
      if (t["name"] == name) return t;
    }
    ADD_FAILURE() << "no template " << name;
    return (*templates_)["templates"][0];
  }

  // Renders every case with `reference`'s Jinja template and Arbor's rendering for `detected`;
  // `only_with_system`: the cases that open with a system message. Returns {compared, refused}.
  static std::pair<int, int> Compare(const json& reference, const json& detected,
                                     bool only_with_system) {
    json request = {{"template", reference["template"]},
                    {"bos_token", reference["bos_token"]},
                    {"eos_token", reference["eos_token"]},
                    {"cases", json::array()}};
    std::vector<Case> cases;
    for (const Case& c : Cases()) {
      if (only_with_system && c.messages[0]["role"] != "system") continue;
      // As text: the request travels as an unordered json, and key order matters here.
      json one = {{"messages", c.messages.dump()}, {"add_generation_prompt", c.generation_prompt}};
      if (c.tools) one["tools"] = Tools().dump();
      request["cases"].push_back(one);
      cases.push_back(c);
    }
    const json answer = arbor::testing::RunPythonReference(
        "tests/model/tokenizer/chat_template_reference.py", request, absl::Seconds(60));
    EXPECT_TRUE(answer.is_object() && answer.contains("rendered"));
    const ChatTemplate chat_template = DetectChatTemplateText(detected["template"]).value();
    int compared = 0, refused = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      ChatTools tools;
      if (cases[i].tools) {
        for (const json& tool : Tools()) tools.tools.push_back(tool.dump());
      }
      absl::StatusOr<std::vector<int>> got =
          ApplyChatTemplate(*tokenizer_, chat_template, ToMessages(cases[i].messages),
                            cases[i].generation_prompt, tools);
      if (answer["rendered"][i].is_null()) {
        EXPECT_FALSE(got.ok()) << "case " << i << ": the template refuses it";
        ++refused;
        continue;
      }
      EXPECT_TRUE(got.ok()) << "case " << i << ": " << got.status();
      if (!got.ok()) continue;
      const std::string want = answer["rendered"][i];
      EXPECT_EQ(*got, tokenizer_->Encode(want, /*parse_special=*/true))
          << "case " << i << ", the template renders:\n"
          << want << "\nArbor renders:\n"
          << tokenizer_->Decode(*got);
      ++compared;
    }
    return {compared, refused};
  }

  static inline const Tokenizer* tokenizer_ = nullptr;
  static inline json* templates_ = nullptr;
};

TEST_F(ToolPromptReferenceTest, ChatMLRendersQwen25ToolFormat) {
  const json& qwen25 = Template("Qwen2.5-Instruct");
  EXPECT_EQ(Compare(qwen25, qwen25, false), std::make_pair(7, 0));
  for (const char* name : {"SmolLM2-Instruct", "Qwen2-Instruct"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(Compare(qwen25, Template(name), true), std::make_pair(6, 0));
  }
}

TEST_F(ToolPromptReferenceTest, Llama31RendersJsonToolCalls) {
  for (const char* name : {"Llama-3.1-Instruct", "Llama-3.2-Instruct"}) {
    SCOPED_TRACE(name);
    const json& llama = Template(name);
    EXPECT_TRUE(DetectChatTemplateText(llama["template"])->json_tool_calls);
    // Two calls in one turn, and tools without a first user message, are refused.
    EXPECT_EQ(Compare(llama, llama, false), std::make_pair(5, 2));
  }
}

TEST_F(ToolPromptReferenceTest, TemplatesWithoutToolFormatRefuseTools) {
  ChatTools tools;
  tools.tools.push_back(Tools()[0].dump());
  for (const char* name :
       {"Llama-3-Instruct", "Mistral-7B-Instruct-v0.3, with its tool branches"}) {
    SCOPED_TRACE(name);
    const ChatTemplate chat_template = DetectChatTemplateText(Template(name)["template"]).value();
    EXPECT_EQ(ToolFormatOf(chat_template), ToolFormat::kNone);
    absl::StatusOr<std::vector<int>> got =
        ApplyChatTemplate(*tokenizer_, chat_template, {{"user", "Hi"}}, true, tools);
    EXPECT_THAT(got.status().message(), ::testing::HasSubstr("has no tool-calling format"));
  }
}

TEST_F(ToolPromptReferenceTest, OpenCallPrefillsTheChatMLOpener) {
  ChatTools tools;
  tools.tools.push_back(Tools()[0].dump());
  tools.open_call = true;
  const ChatTemplate chatml(ChatFormat::kChatML);
  const std::vector<int> ids =
      ApplyChatTemplate(*tokenizer_, chatml, {{"user", "Hi"}}, true, tools).value();
  EXPECT_THAT(tokenizer_->Decode(ids), ::testing::EndsWith("<|im_start|>assistant\n<tool_call>\n"));
}

}  // namespace
}  // namespace arbor::model
