// The JSON that OpenAI clients read back: completion and chat-completion objects, their
// streaming chunks, usage, logprobs in both of OpenAI's shapes, and the error object; plus
// Arbor's additions under `arbor` (the job id of every choice, explored tokens, strategy counts,
// and per token, when asked, the strategy that produced it).
#ifndef ARBOR_COORDINATOR_HTTP_OPENAI_RESPONSE_H_
#define ARBOR_COORDINATOR_HTTP_OPENAI_RESPONSE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/http/openai_request.h"
#include "coordinator/http/tool_calls.h"
#include "views/committed_stream.h"

namespace arbor::coordinator::http {

// What every object of one response shares.
struct ResponseContext {
  const OpenAiRequest* request = nullptr;
  std::string id;       // "cmpl-…" / "chatcmpl-…", from the first choice's job id.
  int64_t created = 0;  // Unix seconds.
  std::string model;
};

// One finished choice.
struct ChoiceResult {
  std::string job_id;
  views::FinalPiece output;  // All of its text and tokens (text: content only).
  arbor::v1::FinishedEvent finished;
  std::vector<ReturnedToolCall> tool_calls;  // Chat with tools: its calls.
};

// The non-streaming response body.
std::string CompletionJson(const ResponseContext& context,
                           const std::vector<ChoiceResult>& choices);

// One streaming chunk of choice `index`: `piece` (the first chunk of a chat choice also carries
// the assistant role), and the finish reason when `finished` is set. `text_offset` carries the
// completions logprobs' character offset from chunk to chunk. `made_tool_calls`: the choice
// returned calls, so it finishes with "tool_calls".
std::string ChunkJson(const ResponseContext& context, int index, const std::string& job_id,
                      const views::FinalPiece& piece, const arbor::v1::FinishedEvent* finished,
                      bool first, size_t* text_offset, bool made_tool_calls = false);

// A call as OpenAI streams it, in two chunks of choice `index`: its index, id, type and name
// with empty arguments, then its arguments under the same index.
std::vector<std::string> ToolCallChunksJson(const ResponseContext& context, int index,
                                            const std::string& job_id,
                                            const ReturnedToolCall& call);

// The last chunk of stream_options.include_usage: no choices, the usage of all of them.
std::string UsageChunkJson(const ResponseContext& context,
                           const std::vector<arbor::v1::Usage>& usages);

// OpenAI's error object for `status`; `param` is the field the message starts with, if any.
std::string ErrorJson(const absl::Status& status);
// The HTTP status for an error of `code` (400, 401, 403, 404, 429, 499, 500, 503, 504).
int HttpStatus(absl::StatusCode code);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_OPENAI_RESPONSE_H_
