#include "model/tokenizer/chat_template.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "model/tokenizer/prompt_builder.h"
#include "model/tokenizer/tool_prompt.h"
#include "nlohmann/json.hpp"

namespace arbor::model {
namespace {

using nlohmann::json;

// Markers that identify each template family whatever its exact wording (Llama 3.0, 3.1 and 3.2
// templates differ in tool handling but share the header tokens).
bool LooksLikeLlama3(absl::string_view text) {
  return absl::StrContains(text, "<|start_header_id|>") &&
         absl::StrContains(text, "<|end_header_id|>") && absl::StrContains(text, "<|eot_id|>");
}

bool LooksLikeChatML(absl::string_view text) {
  return absl::StrContains(text, "<|im_start|>") && absl::StrContains(text, "<|im_end|>");
}

bool LooksLikeMistral(absl::string_view text) {
  return absl::StrContains(text, "[INST]") && absl::StrContains(text, "[/INST]");
}

// The system message a template writes when the conversation opens without one: the first
// system turn whose content is a plain literal, in a template that branches on the role of the
// first message — SmolLM2's and Qwen2's `{% if loop.first and messages[0]['role'] != 'system' %}`
// block, Qwen2.5's `{%- if messages[0]['role'] == 'system' %} … {%- else %}` branch. Empty when
// the template has none or its content is not a plain literal.
std::string DefaultSystem(absl::string_view text) {
  if (!absl::StrContains(text, "'system'") && !absl::StrContains(text, "\"system\"")) return "";
  for (absl::string_view opener :
       {"<|im_start|>system", "<|start_header_id|>system<|end_header_id|>"}) {
    const absl::string_view closer = opener[2] == 'i' ? "<|im_end|>" : "<|eot_id|>";
    for (size_t at = text.find(opener); at != absl::string_view::npos;
         at = text.find(opener, at + 1)) {
      absl::string_view body = text.substr(at + opener.size());
      // The newline(s) after the header, written raw or as a Jinja escape.
      while (absl::ConsumePrefix(&body, "\n") || absl::ConsumePrefix(&body, "\\n")) {
      }
      const size_t end = body.find(closer);
      if (end == absl::string_view::npos) break;
      const absl::string_view content = body.substr(0, end);
      // Only a plain literal: anything Jinja would evaluate (or the end of the string literal:
      // a turn opened here and filled elsewhere) means this is not a fixed default.
      if (content.empty() || absl::StrContains(content, "{{") || absl::StrContains(content, "{%") ||
          absl::StrContains(content, "'") || absl::StrContains(content, "\"")) {
        continue;
      }
      return absl::StrReplaceAll(content, {{"\\n", "\n"}});
    }
  }
  return "";
}

// The first line of Llama 3.1+'s system turn.
constexpr absl::string_view kKnowledgeDate = "Cutting Knowledge Date: December 2023";

// The date Llama 3.1's template writes when it is given none: its `set date_string = "…"`
// literal (Llama 3.1: "26 Jul 2024"), which is also its value when the literal cannot be read.
std::string DateLiteral(absl::string_view text) {
  constexpr absl::string_view kSet = "set date_string = \"";
  const size_t at = text.find(kSet);
  if (at != absl::string_view::npos) {
    const absl::string_view rest = text.substr(at + kSet.size());
    const size_t end = rest.find('"');
    if (end != absl::string_view::npos && end <= 32) return std::string(rest.substr(0, end));
  }
  return "26 Jul 2024";
}

// Today's date as Llama 3.1+'s system turn writes it: the template's literal, or the day of
// rendering as Llama 3.2's strftime_now("%d %b %Y") gives it.
std::string PreambleDate(const ChatTemplate& chat_template) {
  return chat_template.preamble_date.empty()
             ? absl::FormatTime("%d %b %Y", absl::Now(), absl::LocalTimeZone())
             : chat_template.preamble_date;
}

absl::StatusOr<std::vector<int>> ApplyLlama3(const Tokenizer& tokenizer,
                                             const ChatTemplate& chat_template,
                                             const std::vector<ChatMessage>& messages,
                                             bool add_generation_prompt) {
  PromptBuilder b(tokenizer);
  RETURN_IF_ERROR(b.Special("<|begin_of_text|>"));
  auto header = [&](absl::string_view role) -> absl::Status {
    RETURN_IF_ERROR(b.Special("<|start_header_id|>"));
    b.Text(role);
    return b.Special("<|end_header_id|>");
  };
  size_t first = 0;
  if (chat_template.knowledge_date_preamble) {
    // The template takes a leading system message into its own system turn.
    const bool own_system = !messages.empty() && messages[0].role == "system";
    RETURN_IF_ERROR(header("system"));
    b.Text(absl::StrCat("\n\n", kKnowledgeDate, "\nToday Date: ", PreambleDate(chat_template),
                        "\n\n", own_system ? absl::StripAsciiWhitespace(messages[0].content) : ""));
    RETURN_IF_ERROR(b.Special("<|eot_id|>"));
    first = own_system ? 1 : 0;
  }
  for (const ChatMessage& message :
       absl::MakeConstSpan(messages).subspan(std::min(first, messages.size()))) {
    RETURN_IF_ERROR(header(message.role));
    b.Text(absl::StrCat("\n\n", absl::StripAsciiWhitespace(message.content)));
    RETURN_IF_ERROR(b.Special("<|eot_id|>"));
  }
  if (add_generation_prompt) {
    RETURN_IF_ERROR(header("assistant"));
    b.Text("\n\n");
  }
  return b.Finish();
}

// Mistral's prompt: "[INST]" and "[/INST]" are control tokens in v0.3's vocabulary and plain
// text in v0.1's (PromptBuilder::Markup).
absl::StatusOr<std::vector<int>> ApplyMistral(const Tokenizer& tokenizer,
                                              const ChatTemplate& chat_template,
                                              const std::vector<ChatMessage>& messages) {
  absl::Span<const ChatMessage> turns = messages;
  std::optional<std::string> system;
  if (!turns.empty() && turns[0].role == "system") {
    if (chat_template.legacy_mistral) {
      return absl::InvalidArgumentError(
          "this Mistral chat template takes no system message (only user and assistant turns)");
    }
    system = turns[0].content;
    turns.remove_prefix(1);
  }
  PromptBuilder prompt(tokenizer);
  RETURN_IF_ERROR(prompt.Special("<s>"));
  for (size_t i = 0; i < turns.size(); ++i) {
    const ChatMessage& turn = turns[i];
    if ((turn.role == "user") != (i % 2 == 0) ||
        (turn.role != "user" && turn.role != "assistant")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the Mistral chat template needs user and assistant turns alternating from a user "
          "turn (after an optional system message); turn ",
          i, " is '", turn.role, "'"));
    }
    if (turn.role == "user") {
      prompt.Markup("[INST]");
      prompt.Text(" ");
      // v0.3 joins the system message to the last turn only, when that is a user turn.
      if (system && i + 1 == turns.size()) prompt.Text(absl::StrCat(*system, "\n\n"));
      prompt.Text(turn.content);
      if (chat_template.legacy_mistral) prompt.Text(" ");
      prompt.Markup("[/INST]");
    } else {
      if (!chat_template.legacy_mistral) prompt.Text(" ");
      prompt.Text(chat_template.mistral_trims_answers ? absl::StripAsciiWhitespace(turn.content)
                                                      : turn.content);
      RETURN_IF_ERROR(prompt.Special("</s>"));
    }
  }
  return prompt.Finish();
}

absl::StatusOr<std::vector<int>> ApplyChatML(const Tokenizer& tokenizer,
                                             const std::vector<ChatMessage>& messages,
                                             bool add_generation_prompt) {
  PromptBuilder b(tokenizer);
  for (const ChatMessage& message : messages) {
    RETURN_IF_ERROR(b.Special("<|im_start|>"));
    b.Text(absl::StrCat(message.role, "\n", message.content));
    RETURN_IF_ERROR(b.Special("<|im_end|>"));
    b.Text("\n");
  }
  if (add_generation_prompt) {
    RETURN_IF_ERROR(b.Special("<|im_start|>"));
    b.Text("assistant\n");
  }
  return b.Finish();
}

absl::StatusOr<std::vector<int>> ApplyWithoutTools(const Tokenizer& tokenizer,
                                                   const ChatTemplate& chat_template,
                                                   const std::vector<ChatMessage>& messages,
                                                   bool add_generation_prompt) {
  switch (chat_template.format) {
    case ChatFormat::kLlama3:
      return ApplyLlama3(tokenizer, chat_template, messages, add_generation_prompt);
    case ChatFormat::kChatML:
      return ApplyChatML(tokenizer, messages, add_generation_prompt);
    case ChatFormat::kMistral:  // Its prompts end with [/INST]: there is no generation prompt.
      return ApplyMistral(tokenizer, chat_template, messages);
  }
  return absl::InvalidArgumentError("unknown chat template");
}

// A conversation with tools, in the template's tool format.
absl::StatusOr<std::vector<int>> ApplyWithTools(const Tokenizer& tokenizer,
                                                const ChatTemplate& chat_template,
                                                const std::vector<ChatMessage>& messages,
                                                bool add_generation_prompt,
                                                const ChatTools& tools) {
  switch (ToolFormatOf(chat_template)) {
    case ToolFormat::kChatMLToolCall:
      return ApplyChatMLWithTools(tokenizer, messages, tools, add_generation_prompt);
    case ToolFormat::kLlama3Json:
      return ApplyLlama3WithTools(tokenizer, PreambleDate(chat_template), messages, tools,
                                  add_generation_prompt);
    case ToolFormat::kNone:
      break;
  }
  // Without a tool format a "tool" turn is one more role, as the template writes any role;
  // tools and calls have no place in its prompt.
  bool calls = tools.open_call || !tools.tools.empty();
  for (const ChatMessage& message : messages) calls |= !message.tool_calls.empty();
  if (!calls) return ApplyWithoutTools(tokenizer, chat_template, messages, add_generation_prompt);
  return absl::InvalidArgumentError(
      absl::StrCat("the model's chat template (", DescribeChatTemplate(chat_template),
                   ") has no tool-calling format: tools and tool calls are refused"));
}

}  // namespace

absl::StatusOr<ChatTemplate> DetectChatTemplate(absl::string_view tokenizer_config_json) {
  const json config = json::parse(tokenizer_config_json.begin(), tokenizer_config_json.end(),
                                  nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return absl::InvalidArgumentError("tokenizer_config.json is not a JSON object");
  }
  if (!config.contains("chat_template")) {
    return absl::NotFoundError("tokenizer_config.json has no chat_template");
  }
  const json& value = config["chat_template"];
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_array()) {
    for (const json& entry : value) {
      // json::value() throws when "name" holds another type: compare the json values instead.
      if (entry.is_object() && entry.contains("name") && entry["name"] == "default" &&
          entry.contains("template") && entry["template"].is_string()) {
        text = entry["template"].get<std::string>();
      }
    }
    if (text.empty()) {
      return absl::InvalidArgumentError(
          "tokenizer_config.json chat_template is a list without a \"default\" template");
    }
  } else {
    return absl::InvalidArgumentError("tokenizer_config.json chat_template must be a string");
  }
  return DetectChatTemplateText(text);
}

absl::StatusOr<ChatTemplate> DetectChatTemplateText(absl::string_view text) {
  if (LooksLikeLlama3(text)) {
    ChatTemplate llama3(ChatFormat::kLlama3, DefaultSystem(text));
    llama3.knowledge_date_preamble = absl::StrContains(text, kKnowledgeDate);
    if (llama3.knowledge_date_preamble && !absl::StrContains(text, "strftime_now")) {
      llama3.preamble_date = DateLiteral(text);
    }
    // Meta's JSON tool calling (3.1 and later) names the environment calls run in.
    llama3.json_tool_calls =
        llama3.knowledge_date_preamble && absl::StrContains(text, "Environment: ipython");
    return llama3;
  }
  if (LooksLikeChatML(text)) return ChatTemplate(ChatFormat::kChatML, DefaultSystem(text));
  // Later Mistral templates (v7: [SYSTEM_PROMPT] turns) place the system message elsewhere: they
  // are not rendered as the [INST] family, which would put it in the wrong place.
  if (LooksLikeMistral(text) && !absl::StrContains(text, "[SYSTEM_PROMPT]")) {
    ChatTemplate mistral(ChatFormat::kMistral);
    // v0.1 closes a user turn with " [/INST]"; v0.3 with "[/INST]" and opens answers with a space.
    mistral.legacy_mistral = absl::StrContains(text, "' [/INST]'");
    mistral.mistral_trims_answers = absl::StrContains(text, "|trim + eos_token") ||
                                    absl::StrContains(text, "| trim + eos_token");
    return mistral;
  }
  const size_t shown = std::min<size_t>(text.size(), 80);
  return absl::InvalidArgumentError(absl::StrCat(
      "unrecognised chat_template (not Llama 3 headers, ChatML <|im_start|> or Mistral [INST]): \"",
      text.substr(0, shown), text.size() > shown ? "…\"" : "\"",
      "; choose one with --chat_template NAME (llama3, chatml or mistral)"));
}

ToolFormat ToolFormatOf(const ChatTemplate& chat_template) {
  switch (chat_template.format) {
    case ChatFormat::kChatML:
      return ToolFormat::kChatMLToolCall;
    case ChatFormat::kLlama3:
      return chat_template.json_tool_calls ? ToolFormat::kLlama3Json : ToolFormat::kNone;
    case ChatFormat::kMistral:
      return ToolFormat::kNone;
  }
  return ToolFormat::kNone;
}

absl::StatusOr<ChatFormat> ParseChatTemplateName(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "llama3") return ChatFormat::kLlama3;
  if (lower == "chatml") return ChatFormat::kChatML;
  if (lower == "mistral") return ChatFormat::kMistral;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown chat template '", name, "' (expected llama3, chatml or mistral)"));
}

std::string ChatTemplateName(ChatFormat format) {
  switch (format) {
    case ChatFormat::kLlama3:
      return "llama3";
    case ChatFormat::kChatML:
      return "chatml";
    case ChatFormat::kMistral:
      return "mistral";
  }
  return "unknown";
}

std::string DescribeChatTemplate(const absl::StatusOr<ChatTemplate>& chat_template) {
  if (!chat_template.ok()) {
    return absl::StrCat("none (", chat_template.status().message(), "; chat prompts are refused)");
  }
  std::string description = ChatTemplateName(chat_template->format);
  if (!chat_template->default_system.empty()) {
    absl::StrAppend(&description, " (default system message: \"", chat_template->default_system,
                    "\")");
  }
  if (chat_template->legacy_mistral) absl::StrAppend(&description, " (v0.1 spacing)");
  if (chat_template->knowledge_date_preamble) {
    absl::StrAppend(&description, " (knowledge-date system turn, dated ",
                    chat_template->preamble_date.empty() ? "the day of rendering"
                                                         : chat_template->preamble_date,
                    ")");
  }
  return description;
}

std::string Llama3ChatTemplate() {
  return "{% set loop_messages = messages %}{% for message in loop_messages %}"
         "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
         "+ message['content'] | trim + '<|eot_id|>' %}"
         "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
         "{{ content }}{% endfor %}"
         "{% if add_generation_prompt %}"
         "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
}

std::string ChatMLChatTemplate() {
  return "{% for message in messages %}"
         "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
         "{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
}

absl::StatusOr<std::vector<int>> ApplyChatTemplate(const Tokenizer& tokenizer,
                                                   const ChatTemplate& chat_template,
                                                   const std::vector<ChatMessage>& messages,
                                                   bool add_generation_prompt,
                                                   const ChatTools& tools) {
  std::vector<ChatMessage> with_system;
  const std::vector<ChatMessage>* conversation = &messages;
  if (!chat_template.default_system.empty() &&
      (messages.empty() || messages.front().role != "system")) {
    with_system.push_back({"system", chat_template.default_system});
    with_system.insert(with_system.end(), messages.begin(), messages.end());
    conversation = &with_system;
  }
  if (UsesTools(*conversation, tools)) {
    return ApplyWithTools(tokenizer, chat_template, *conversation, add_generation_prompt, tools);
  }
  return ApplyWithoutTools(tokenizer, chat_template, *conversation, add_generation_prompt);
}

}  // namespace arbor::model
