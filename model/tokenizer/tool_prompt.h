// Conversations with tools rendered in a template's tool format (chat_template.h ToolFormat),
// byte for byte as the model's own Jinja template renders them:
//  - ChatML (Qwen2.5's template): the system turn gains "# Tools" with one JSON line per tool in
//    <tools></tools> and the instruction to answer with <tool_call> blocks; an assistant turn's
//    calls follow its text as "\n<tool_call>\n{"name": …, "arguments": …}\n</tool_call>"; "tool"
//    turns become <tool_response> blocks of one user turn, consecutive ones merged.
//  - Llama 3.1+ (Meta's JSON tool calling): "Environment: ipython" opens the system turn, the tools
//    (indented JSON) and the instruction join the first user message, a call is the assistant
//    turn {"name": …, "parameters": …} (one per turn, as the template requires), and a result is
//    an "ipython" turn holding the content as a JSON string.
// Used by ApplyChatTemplate; the conversation already carries the template's default system
// message.
#ifndef ARBOR_MODEL_TOKENIZER_TOOL_PROMPT_H_
#define ARBOR_MODEL_TOKENIZER_TOOL_PROMPT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"

namespace arbor::model {

// Whether `messages` or `tools` hold anything only a tool format renders.
bool UsesTools(const std::vector<ChatMessage>& messages, const ChatTools& tools);

absl::StatusOr<std::vector<int>> ApplyChatMLWithTools(const Tokenizer& tokenizer,
                                                      const std::vector<ChatMessage>& messages,
                                                      const ChatTools& tools,
                                                      bool add_generation_prompt);

// `date`: the "Today Date" of the system turn.
absl::StatusOr<std::vector<int>> ApplyLlama3WithTools(const Tokenizer& tokenizer,
                                                      const std::string& date,
                                                      const std::vector<ChatMessage>& messages,
                                                      const ChatTools& tools,
                                                      bool add_generation_prompt);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_TOOL_PROMPT_H_
