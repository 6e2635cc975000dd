// Chat templates: turn a conversation into prompt token ids with the model's special tokens.
// Llama 3 and ChatML are built in; which one a checkpoint uses is recognised from the Jinja
// "chat_template" in its tokenizer_config.json (or forced by name). Rendering is done in C++
// rather than by a Jinja engine, so message contents are always encoded as plain text: a user
// cannot smuggle "<|eot_id|>" into the prompt as a control token.
#ifndef ARBOR_MODEL_TOKENIZER_CHAT_TEMPLATE_H_
#define ARBOR_MODEL_TOKENIZER_CHAT_TEMPLATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/tokenizer/tokenizer.h"

namespace arbor::model {

enum class ChatTemplate { kLlama3, kChatML };

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", …
  std::string content;
};

// Recognises the template in the text of a tokenizer_config.json ("chat_template" as a string,
// or a list of {name, template} where "default" is used). The error names what was found.
absl::StatusOr<ChatTemplate> DetectChatTemplate(absl::string_view tokenizer_config_json);

// "llama3" or "chatml" (case-insensitive), for a flag that forces the template.
absl::StatusOr<ChatTemplate> ParseChatTemplateName(absl::string_view name);
// The lower-case name ParseChatTemplateName accepts.
std::string ChatTemplateName(ChatTemplate chat_template);

// Llama 3 Instruct's Jinja chat template, for writing tokenizer_config.json; DetectChatTemplate
// recognises it.
std::string Llama3ChatTemplate();
// ChatML's Jinja chat template (as used by SmolLM and Qwen), recognised likewise.
std::string ChatMLChatTemplate();

// The prompt ids for `messages`. Llama 3: <|begin_of_text|> then, per message,
// <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> (content trimmed, as the
// template does); ChatML: <|im_start|>role\ncontent<|im_end|>\n per message. With
// `add_generation_prompt`, the assistant header follows. Fails when the tokenizer lacks one of
// the special tokens the template needs, naming it.
absl::StatusOr<std::vector<int>> ApplyChatTemplate(const Tokenizer& tokenizer,
                                                   ChatTemplate chat_template,
                                                   const std::vector<ChatMessage>& messages,
                                                   bool add_generation_prompt);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_CHAT_TEMPLATE_H_
