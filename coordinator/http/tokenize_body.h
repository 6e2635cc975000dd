// The bodies and answers of POST /tokenize and /detokenize, in vLLM's shapes, so tools written
// for vLLM (prompt-length checks, token counting in clients and proxies) work unchanged:
//   tokenize   {"model", "prompt"} or {"model", "messages", "add_generation_prompt"}
//              -> {"tokens": [...], "count": n, "max_model_len": m}
//   detokenize {"model", "tokens"} -> {"prompt": "..."}
// Strict as the completion bodies are: an unknown field or a wrong type is an error naming it.
#ifndef ARBOR_COORDINATOR_HTTP_TOKENIZE_BODY_H_
#define ARBOR_COORDINATOR_HTTP_TOKENIZE_BODY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator::http {

struct TokenizeBody {
  std::string model;  // As given; empty when absent.
  // The prompt as a completion's job would carry it: text, or chat messages (content a string)
  // with add_generation_prompt (default true, as vLLM's).
  arbor::v1::GenerateRequest prompt;
};

struct DetokenizeBody {
  std::string model;  // As given; empty when absent.
  arbor::v1::DetokenizeRequest tokens;
};

// INVALID_ARGUMENT with a message that starts with the offending field.
absl::StatusOr<TokenizeBody> ParseTokenizeBody(absl::string_view body);
absl::StatusOr<DetokenizeBody> ParseDetokenizeBody(absl::string_view body);

// The answers' JSON text.
std::string TokenizeAnswer(const arbor::v1::TokenizeResponse& tokens);
std::string DetokenizeAnswer(const arbor::v1::DetokenizeResponse& text);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_TOKENIZE_BODY_H_
