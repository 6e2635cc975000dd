// The bodies of POST /v1/completions and /v1/chat/completions, as OpenAI documents them, parsed
// and checked field by field into the GenerateRequests their choices run as.
//
// Strict where silence would mislead: an unknown field, a wrong type or an OpenAI parameter Arbor
// does not implement with a non-neutral value (frequency_penalty 0.5, echo true, ...) is an
// error naming the field, never ignored. Neutral values that common clients always send
// (frequency_penalty 0, logit_bias {}, user, ...) are accepted.
//
// Mapping. `temperature`, `top_p`, `top_k`, `min_p`, `n` and `seed` mean what they mean under
// the policy the request runs (openai_sampling.h; the table in docs/HTTP.md). Arbor's own knobs
// travel in `arbor`: `policy` (a PolicyConfig in JSON, the format of --policy_file) or
// `policy_name` (a preset), `token_strategies` (report the strategy of every token),
// `reasoning` (the search's traces as `reasoning_content`), `client_tag`, `deadline_ms`,
// `ignore_eos`, `stop_token_ids`.
#ifndef ARBOR_COORDINATOR_HTTP_OPENAI_REQUEST_H_
#define ARBOR_COORDINATOR_HTTP_OPENAI_REQUEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/http/tool_request.h"
#include "model/tokenizer/chat_template.h"

namespace arbor::coordinator::http {

enum class Endpoint { kCompletions, kChatCompletions };

// The most alternatives per token a client may ask for (OpenAI's own limit for chat).
inline constexpr int kMaxTopLogprobs = 20;
// Choices per request (OpenAI allows 128; each is a job holding KV, so fewer here).
inline constexpr int kMaxChoices = 16;

struct OpenAiRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;  // As given; empty when absent.
  int n = 1;          // Choices per prompt.
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage.
  int logprobs = -1;              // Alternatives per token to report; -1: no logprobs at all.
  bool token_strategies = false;  // arbor.token_strategies.
  // arbor.reasoning: the text of the search's traces as `reasoning_content` (default: when
  // streaming).
  bool reasoning = false;
  ToolRequest tools;  // Chat: tools, tool_choice, parallel_tool_calls (tool_request.h).
  // One request per choice, in response order: prompt-major (prompt p, choice j at p·n + j).
  std::vector<arbor::v1::GenerateRequest> choices;
};

// INVALID_ARGUMENT with a message that starts with the offending field ("messages[1].role: ...").
// `server_policy`: the coordinator's default policy, which the request's own applies over; it
// says what a request that names no policy runs (a TRACE default makes `n` its best traces).
// `tool_format`: the served model's chat template's, for `tools` (none: tools are refused).
absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(
    absl::string_view body, Endpoint endpoint, const arbor::v1::PolicyConfig& server_policy,
    model::ToolFormat tool_format = model::ToolFormat::kNone);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_OPENAI_REQUEST_H_
