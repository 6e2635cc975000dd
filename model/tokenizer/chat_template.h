// Chat templates: turn a conversation into prompt token ids with the model's special tokens.
// Llama 3 (3.0 and 3.1+), ChatML and Mistral [INST] are built in; which one a checkpoint uses is
// recognised from the Jinja "chat_template" in its tokenizer_config.json (or forced by name).
// Rendering is done in C++ rather than by a Jinja engine, so message contents are always encoded as
// plain text: a user cannot smuggle "<|eot_id|>" into the prompt as a control token.
#ifndef ARBOR_MODEL_TOKENIZER_CHAT_TEMPLATE_H_
#define ARBOR_MODEL_TOKENIZER_CHAT_TEMPLATE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/tokenizer/tokenizer.h"

namespace arbor::model {

enum class ChatFormat { kLlama3, kChatML, kMistral };

// A recognised template: its format, and the system message it opens a conversation with when
// the conversation brings none (SmolLM2's template: "You are a helpful AI assistant named
// SmolLM, trained by Hugging Face"; Qwen2.5's: "You are Qwen, created by Alibaba Cloud. You are
// a helpful assistant."; empty for none).
struct ChatTemplate {
  ChatTemplate(ChatFormat format, std::string default_system = "")
      : format(format), default_system(std::move(default_system)) {}
  ChatFormat format;
  std::string default_system;
  // Llama 3.1+: every conversation opens with a system turn whose text is "Cutting Knowledge
  // Date: December 2023\nToday Date: DATE\n\n" followed by the conversation's own system
  // message (trimmed), if any.
  bool knowledge_date_preamble = false;
  // DATE: the template's literal (Llama 3.1: "26 Jul 2024"), or empty for the day of rendering
  // in local time, as Llama 3.2's strftime_now("%d %b %Y") gives it.
  std::string preamble_date;
  // Mistral's two spellings. v0.3 (and v0.2's later template, the default): "[INST] user[/INST]"
  // then " assistant</s>", a leading system message joined to the last user message as
  // "system\n\nuser". v0.1 (`legacy_mistral`): "[INST] user [/INST]" then "assistant</s>", and
  // no system message.
  bool legacy_mistral = false;
  // Mistral v0.3's template trims an answer before " answer</s>".
  bool mistral_trims_answers = false;
  // Llama 3.1+: the template has Meta's JSON tool calling ("Environment: ipython", tools in the
  // first user message, calls as {"name": …, "parameters": …}, results as "ipython" turns).
  bool json_tool_calls = false;
};

// How a template shows tools and calls to the model (tool_prompt.h).
enum class ToolFormat {
  kNone,
  // Qwen2.5's ChatML form, used for every ChatML template: a "# Tools" system section, calls as
  // <tool_call>{"name": …, "arguments": …}</tool_call> blocks, results as <tool_response> blocks
  // of a user turn.
  kChatMLToolCall,
  kLlama3Json,  // ChatTemplate::json_tool_calls.
};
ToolFormat ToolFormatOf(const ChatTemplate& chat_template);

struct ChatToolCall {
  std::string name;
  std::string arguments;  // A JSON object, as text.
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool", …
  std::string content;
  std::vector<ChatToolCall> tool_calls = {};  // An assistant turn's calls.
};

// What a conversation brings beyond its messages for tool calling.
struct ChatTools {
  // OpenAI tool objects ({"type": "function", "function": {…}}) as JSON text.
  std::vector<std::string> tools;
  // After the generation prompt, open a call (ChatML: "<tool_call>\n"): the answer is its JSON.
  bool open_call = false;
};

// Recognises the template in the text of a tokenizer_config.json ("chat_template" as a string,
// or a list of {name, template} where "default" is used). The error names what was found and
// the --chat_template flag that chooses a format instead.
absl::StatusOr<ChatTemplate> DetectChatTemplate(absl::string_view tokenizer_config_json);
// Recognises a Jinja chat template given as text (GGUF's tokenizer.chat_template).
absl::StatusOr<ChatTemplate> DetectChatTemplateText(absl::string_view jinja);

// "llama3", "chatml" or "mistral" (case-insensitive), for a flag that forces the template.
absl::StatusOr<ChatFormat> ParseChatTemplateName(absl::string_view name);
// The lower-case name ParseChatTemplateName accepts.
std::string ChatTemplateName(ChatFormat format);

// For logs: "chatml", "chatml (default system message: \"…\")", "llama3 (knowledge-date system
// turn, dated 26 Jul 2024)", or "none (WHY; chat prompts are refused)".
std::string DescribeChatTemplate(const absl::StatusOr<ChatTemplate>& chat_template);

// Llama 3 Instruct's Jinja chat template, for writing tokenizer_config.json; DetectChatTemplate
// recognises it.
std::string Llama3ChatTemplate();
// ChatML's Jinja chat template (as used by SmolLM and Qwen), recognised likewise.
std::string ChatMLChatTemplate();

// The prompt ids for `messages`. Llama 3: <|begin_of_text|>, the knowledge-date system turn
// when the template has one, then, per message,
// <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> (content trimmed, as the
// template does); ChatML: <|im_start|>role\ncontent<|im_end|>\n per message; Mistral: <s>, then
// "[INST] user[/INST]" and " assistant</s>" (legacy_mistral: "[INST] user [/INST]",
// "assistant</s>"), refusing turns that do not alternate as its template does. With
// `add_generation_prompt`, the assistant header follows (Mistral has none). A conversation without
// a system message first gets the template's default_system, if any. Fails when the tokenizer lacks
// one of the special tokens the template needs, naming it.
// Tools, tool calls and "tool" turns are rendered in ToolFormatOf(chat_template) (tool_prompt.h);
// a template without one refuses them.
absl::StatusOr<std::vector<int>> ApplyChatTemplate(const Tokenizer& tokenizer,
                                                   const ChatTemplate& chat_template,
                                                   const std::vector<ChatMessage>& messages,
                                                   bool add_generation_prompt,
                                                   const ChatTools& tools = {});

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_CHAT_TEMPLATE_H_
