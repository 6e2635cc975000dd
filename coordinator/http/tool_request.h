// OpenAI tool calling, the request side: `tools`, `tool_choice` and `parallel_tool_calls` of a
// chat completion, checked field by field (errors name the field), the tool fields of its
// messages (an assistant's `tool_calls`, a tool result's `tool_call_id`), and what a request
// with tools asks of generation: the tools rendered in the model's tool format, and for
// tool_choice "required" or a named function, the assistant turn opened with the format's call
// opener and its rest constrained to the call's JSON (docs/HTTP.md, "Tool calling").
#ifndef ARBOR_COORDINATOR_HTTP_TOOL_REQUEST_H_
#define ARBOR_COORDINATOR_HTTP_TOOL_REQUEST_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/http/json_fields.h"
#include "grammar/json_grammar.h"
#include "model/tokenizer/chat_template.h"

namespace arbor::coordinator::http {

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ToolFunction {
  std::string name;
  std::string parameters;  // Its JSON Schema as exact JSON text.
  // The schema compiled: the arguments of a call it returns are a document of this grammar.
  std::shared_ptr<const grammar::JsonGrammar> grammar;
};

struct ToolRequest {
  model::ToolFormat format = model::ToolFormat::kNone;
  std::vector<ToolFunction> functions;  // As given; empty without tools.
  // kNone without tools; with tools, OpenAI's default is "auto".
  ToolChoice choice = ToolChoice::kNone;
  std::string named;     // kNamed: the function's name.
  bool parallel = true;  // parallel_tool_calls.
  // Whether the output is read for calls.
  bool parses_calls() const { return !functions.empty() && choice != ToolChoice::kNone; }
  // Whether the output is a call from its first token.
  bool forced() const { return choice == ToolChoice::kRequired || choice == ToolChoice::kNamed; }
  // The name of the key that holds a call's arguments: "arguments", or Llama's "parameters".
  std::string arguments_key() const {
    return format == model::ToolFormat::kLlama3Json ? "parameters" : "arguments";
  }
};

// Reads `tools`, `tool_choice` and `parallel_tool_calls` from the request's fields into `out`
// and, when tools are given, their JSON into `chat.tools` (as the client wrote them). `format`:
// the served model's; tools are refused for a model without one.
absl::Status ReadTools(Fields& f, model::ToolFormat format, ToolRequest& out,
                       arbor::v1::ChatPrompt& chat);

// What generation needs for `tools`: for a forced call, the call opener (chat.open_tool_call)
// and the output constraint (the call object: "name" a const, the arguments its function's
// schema; an anyOf of those for "required" with several tools); in "auto" with
// parallel_tool_calls false, a stop after the first call's closer. `stops`: the request's stop
// strings, added to.
absl::Status ApplyTools(const ToolRequest& tools, arbor::v1::ChatPrompt& chat,
                        arbor::v1::OutputConstraint& constraint, std::vector<std::string>& stops);

// Reads an assistant message's `tool_calls` ([{id, type: "function", function: {name,
// arguments}}], arguments a string holding a JSON object) into `message`.
absl::Status ReadMessageToolCalls(const Fields::json& calls, const std::string& field,
                                  arbor::v1::ChatMessage& message);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_TOOL_REQUEST_H_
