#include "model/tokenizer/tool_prompt.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "model/tokenizer/prompt_builder.h"
#include "model/tokenizer/python_json.h"
#include "nlohmann/json.hpp"

namespace arbor::model {
namespace {

using OrderedJson = nlohmann::ordered_json;

// A JSON text as the template's `tojson` writes the value it holds.
absl::StatusOr<std::string> Reformat(const std::string& text, int indent, absl::string_view what) {
  const OrderedJson value = OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not valid JSON"));
  }
  return PythonJsonDumps(value, indent);
}

constexpr absl::string_view kChatMLToolsIntro =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr absl::string_view kChatMLToolsOutro =
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>";

absl::Status ChatMLSystem(const std::vector<ChatMessage>& messages, const ChatTools& tools,
                          PromptBuilder& b) {
  const bool own_system = !messages.empty() && messages[0].role == "system";
  if (tools.tools.empty() && !own_system) return absl::OkStatus();
  RETURN_IF_ERROR(b.Special("<|im_start|>"));
  b.Text(absl::StrCat("system\n", own_system ? messages[0].content : ""));
  if (!tools.tools.empty()) {
    b.Text(kChatMLToolsIntro);
    for (const std::string& tool : tools.tools) {
      ASSIGN_OR_RETURN(std::string text, Reformat(tool, -1, "a tool"));
      b.Text(absl::StrCat("\n", text));
    }
    b.Text(kChatMLToolsOutro);
  }
  RETURN_IF_ERROR(b.Special("<|im_end|>"));
  b.Text("\n");
  return absl::OkStatus();
}

absl::Status ChatMLAssistantCalls(const ChatMessage& message, PromptBuilder& b) {
  RETURN_IF_ERROR(b.Special("<|im_start|>"));
  b.Text("assistant");
  if (!message.content.empty()) b.Text(absl::StrCat("\n", message.content));
  for (const ChatToolCall& call : message.tool_calls) {
    ASSIGN_OR_RETURN(std::string arguments, Reformat(call.arguments, -1, "a call's arguments"));
    b.Text(absl::StrCat("\n<tool_call>\n{\"name\": \"", call.name, "\", \"arguments\": ", arguments,
                        "}\n</tool_call>"));
  }
  RETURN_IF_ERROR(b.Special("<|im_end|>"));
  b.Text("\n");
  return absl::OkStatus();
}

// Renders `message` at `i` in one of the three ways of Qwen2.5's message loop.
absl::Status ChatMLMessage(const std::vector<ChatMessage>& messages, size_t i, PromptBuilder& b) {
  const ChatMessage& message = messages[i];
  if (message.role == "tool") {
    if (i == 0 || messages[i - 1].role != "tool") {
      RETURN_IF_ERROR(b.Special("<|im_start|>"));
      b.Text("user");
    }
    b.Text(absl::StrCat("\n<tool_response>\n", message.content, "\n</tool_response>"));
    if (i + 1 == messages.size() || messages[i + 1].role != "tool") {
      RETURN_IF_ERROR(b.Special("<|im_end|>"));
      b.Text("\n");
    }
    return absl::OkStatus();
  }
  if (message.role == "assistant" && !message.tool_calls.empty()) {
    return ChatMLAssistantCalls(message, b);
  }
  RETURN_IF_ERROR(b.Special("<|im_start|>"));
  b.Text(absl::StrCat(message.role, "\n", message.content));
  RETURN_IF_ERROR(b.Special("<|im_end|>"));
  b.Text("\n");
  return absl::OkStatus();
}

absl::Status Llama3Header(absl::string_view role, PromptBuilder& b) {
  RETURN_IF_ERROR(b.Special("<|start_header_id|>"));
  b.Text(role);
  RETURN_IF_ERROR(b.Special("<|end_header_id|>"));
  b.Text("\n\n");
  return absl::OkStatus();
}

// The first user message with the tools and the instruction before its text.
absl::Status Llama3ToolsTurn(const ChatMessage& first, const ChatTools& tools, PromptBuilder& b) {
  RETURN_IF_ERROR(Llama3Header("user", b));
  b.Text(
      "Given the following functions, please respond with a JSON for a function call with its "
      "proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": "
      "function name, \"parameters\": dictionary of argument name and its value}.Do not use "
      "variables.\n\n");
  for (const std::string& tool : tools.tools) {
    ASSIGN_OR_RETURN(std::string text, Reformat(tool, 4, "a tool"));
    b.Text(absl::StrCat(text, "\n\n"));
  }
  b.Text(absl::StripAsciiWhitespace(first.content));
  return b.Special("<|eot_id|>");
}

absl::Status Llama3Message(const ChatMessage& message, PromptBuilder& b) {
  if (message.role == "tool" || message.role == "ipython") {
    RETURN_IF_ERROR(Llama3Header("ipython", b));
    // The template writes a string result through `tojson` too: as a JSON string.
    b.Text(OrderedJson(message.content)
               .dump(-1, ' ', /*ensure_ascii=*/false, OrderedJson::error_handler_t::replace));
  } else if (!message.tool_calls.empty()) {
    if (message.tool_calls.size() != 1) {
      return absl::InvalidArgumentError(
          "this Llama 3 chat template takes one tool call per assistant turn");
    }
    const ChatToolCall& call = message.tool_calls[0];
    ASSIGN_OR_RETURN(std::string arguments, Reformat(call.arguments, -1, "a call's arguments"));
    RETURN_IF_ERROR(Llama3Header("assistant", b));
    b.Text(absl::StrCat("{\"name\": \"", call.name, "\", \"parameters\": ", arguments, "}"));
  } else {
    RETURN_IF_ERROR(Llama3Header(message.role, b));
    b.Text(absl::StripAsciiWhitespace(message.content));
  }
  return b.Special("<|eot_id|>");
}

}  // namespace

bool UsesTools(const std::vector<ChatMessage>& messages, const ChatTools& tools) {
  if (!tools.tools.empty() || tools.open_call) return true;
  for (const ChatMessage& message : messages) {
    if (message.role == "tool" || !message.tool_calls.empty()) return true;
  }
  return false;
}

absl::StatusOr<std::vector<int>> ApplyChatMLWithTools(const Tokenizer& tokenizer,
                                                      const std::vector<ChatMessage>& messages,
                                                      const ChatTools& tools,
                                                      bool add_generation_prompt) {
  PromptBuilder b(tokenizer);
  RETURN_IF_ERROR(ChatMLSystem(messages, tools, b));
  const size_t first = !messages.empty() && messages[0].role == "system" ? 1 : 0;
  for (size_t i = first; i < messages.size(); ++i) RETURN_IF_ERROR(ChatMLMessage(messages, i, b));
  if (add_generation_prompt) {
    RETURN_IF_ERROR(b.Special("<|im_start|>"));
    b.Text(tools.open_call ? "assistant\n<tool_call>\n" : "assistant\n");
  }
  return b.Finish();
}

absl::StatusOr<std::vector<int>> ApplyLlama3WithTools(const Tokenizer& tokenizer,
                                                      const std::string& date,
                                                      const std::vector<ChatMessage>& messages,
                                                      const ChatTools& tools,
                                                      bool add_generation_prompt) {
  absl::Span<const ChatMessage> rest = messages;
  std::string system;
  if (!rest.empty() && rest[0].role == "system") {
    system = std::string(absl::StripAsciiWhitespace(rest[0].content));
    rest.remove_prefix(1);
  }
  PromptBuilder b(tokenizer);
  RETURN_IF_ERROR(b.Special("<|begin_of_text|>"));
  RETURN_IF_ERROR(Llama3Header("system", b));
  b.Text(absl::StrCat(tools.tools.empty() ? "" : "Environment: ipython\n",
                      "Cutting Knowledge Date: December 2023\nToday Date: ", date, "\n\n", system));
  RETURN_IF_ERROR(b.Special("<|eot_id|>"));
  if (!tools.tools.empty()) {
    if (rest.empty()) {
      return absl::InvalidArgumentError(
          "this Llama 3 chat template puts the tools in the first user message: the "
          "conversation needs one");
    }
    RETURN_IF_ERROR(Llama3ToolsTurn(rest[0], tools, b));
    rest.remove_prefix(1);
  }
  for (const ChatMessage& message : rest) RETURN_IF_ERROR(Llama3Message(message, b));
  if (add_generation_prompt) RETURN_IF_ERROR(Llama3Header("assistant", b));
  return b.Finish();
}

}  // namespace arbor::model
