// OpenAI tool calling, the response side: the calls in a chat completion's generated text, read
// as the text becomes final, so that a stream can send call deltas and never the call markup as
// content.
//
// ChatML (tool_prompt.h): a call is a <tool_call> … </tool_call> block holding
// {"name": …, "arguments": {…}}; text outside the blocks is content (whitespace before a block
// and at the end dropped). Llama 3.1+: the whole answer, after an optional "<|python_tag|>", is
// one {"name": …, "parameters": {…}} object. A forced call (tool_choice "required" or named) is
// the answer itself: the opener was in the prompt, and the closer may be missing.
//
// A call is returned only when it names one of the request's tools and its arguments are a
// document of that function's compiled parameters schema (json_grammar.h): anything else stays
// content, so every returned call's arguments parse and validate. Arguments are returned as
// compact JSON (grammar/exact_json.h), the same for a stream and a whole answer.
#ifndef ARBOR_COORDINATOR_HTTP_TOOL_CALLS_H_
#define ARBOR_COORDINATOR_HTTP_TOOL_CALLS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "coordinator/http/tool_request.h"

namespace arbor::coordinator::http {

struct ReturnedToolCall {
  int index = 0;   // Among the choice's calls.
  std::string id;  // "call_…".
  std::string name;
  std::string arguments;  // A JSON object, compact.
};

// One choice's answer, read piece by piece. `tools` must outlive the reader.
class ToolCallReader {
 public:
  // `id_prefix` makes call ids unique: the choice's job id.
  ToolCallReader(const ToolRequest* tools, std::string id_prefix);

  struct Output {
    std::string content;  // Text that is content, to send now.
    std::vector<ReturnedToolCall> calls;
  };
  // The next final text of the answer.
  Output Push(absl::string_view text);
  // The answer has ended: what was held back.
  Output Finish();
  int calls() const { return next_index_; }

 private:
  void PushChatML(Output& out);
  void PushLlama(Output& out);
  // A call's block (its text between the markers): a call, or content when it is not a valid
  // one (`closed`: its closer came).
  void TakeBlock(const std::string& block, bool closed, Output& out);
  // The call `text` holds, if it is a valid one.
  std::optional<ReturnedToolCall> Parse(absl::string_view text);
  // Content, its trailing whitespace held back until more content follows.
  void Content(absl::string_view text, Output& out);

  const ToolRequest* tools_;
  std::string id_prefix_;
  std::string buffer_;  // Not yet decided.
  bool in_call_ = false;
  bool opener_in_prompt_ = false;  // The open block's opener is the prompt's, not the answer's.
  std::string pending_space_;      // Trailing whitespace of the content so far.
  bool holding_whole_ = false;     // Llama: the answer may be a call; hold it all.
  bool decided_ = false;           // Llama: the answer's kind is known.
  int next_index_ = 0;
};

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_TOOL_CALLS_H_
