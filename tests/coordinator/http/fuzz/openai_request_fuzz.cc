// The HTTP gateway's request parsers on arbitrary bodies, as both OpenAI endpoints (chat also as
// a model with each tool format) and as a replay's body: each must answer every input with a
// request or an INVALID_ARGUMENT naming a field, never crash or hang. A chat request whose tools
// are called also reads the body as if the model had written it (tool_calls.h), whole and byte
// by byte: both must agree, and every call returned must have object arguments.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "coordinator/http/json_body.h"
#include "coordinator/http/openai_request.h"
#include "coordinator/http/tool_calls.h"
#include "nlohmann/json.hpp"

namespace {

using arbor::coordinator::http::ToolCallReader;

// The content and calls (name and arguments, one line each) read from `text` in pieces of
// `piece` bytes.
std::string ReadCalls(const arbor::coordinator::http::ToolRequest& tools, absl::string_view text,
                      size_t piece) {
  ToolCallReader reader(&tools, "j1");
  std::string out;
  auto take = [&](const ToolCallReader::Output& read) {
    out += read.content;
    for (const auto& call : read.calls) {
      if (!nlohmann::json::parse(call.arguments, nullptr, false).is_object()) abort();
      out += "\n" + call.name + " " + call.arguments + "\n";
    }
  };
  for (size_t at = 0; at < text.size(); at += piece) take(reader.Push(text.substr(at, piece)));
  take(reader.Finish());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using arbor::coordinator::http::Endpoint;
  using arbor::model::ToolFormat;
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  for (auto [endpoint, format] :
       {std::pair{Endpoint::kCompletions, ToolFormat::kNone},
        std::pair{Endpoint::kChatCompletions, ToolFormat::kNone},
        std::pair{Endpoint::kChatCompletions, ToolFormat::kChatMLToolCall},
        std::pair{Endpoint::kChatCompletions, ToolFormat::kLlama3Json}}) {
    absl::StatusOr<arbor::coordinator::http::OpenAiRequest> parsed =
        arbor::coordinator::http::ParseOpenAiRequest(body, endpoint, arbor::v1::PolicyConfig(),
                                                     format);
    if (!parsed.ok() && parsed.status().code() != absl::StatusCode::kInvalidArgument) abort();
    if (parsed.ok() && parsed->choices.empty()) abort();  // Every request runs something.
    if (parsed.ok() && parsed->tools.parses_calls() &&
        ReadCalls(parsed->tools, body, body.size() + 1) != ReadCalls(parsed->tools, body, 1)) {
      abort();
    }
  }
  absl::StatusOr<arbor::v1::ReplayRequest> replay =
      arbor::coordinator::http::ParseReplayBody("j1", body);
  if (!replay.ok() && replay.status().code() != absl::StatusCode::kInvalidArgument) abort();
  if (replay.ok() && replay->job_id() != "j1") abort();
  return 0;
}
