// The edge of the public API: turns a GenerateRequest (and the small requests of the other
// Generation RPCs) into checked values, or INVALID_ARGUMENT whose message names the field path
// and the allowed range, e.g. "policy.branch.width: 1 is outside [2, 64]" (docs/ARCHITECTURE.md
// §7).
//
// Checks that need the model (token ids against the vocabulary) take its ModelInfo; the check of
// max_tokens against the context needs the tokenized prompt and is the separate ResolveMaxTokens.
// Cross-field policy semantics belong to entropix::PolicyConfig::Validate; this file covers the
// proto-level ranges documented in proto/arbor/v1/entropix.proto.
#ifndef ARBOR_COORDINATOR_SERVICE_REQUEST_VALIDATION_H_
#define ARBOR_COORDINATOR_SERVICE_REQUEST_VALIDATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/generation.pb.h"
#include "arbor/v1/worker.pb.h"
#include "base/answer_pattern.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

// Limits of this coordinator, independent of the model.
struct ServerLimits {
  int32_t default_max_tokens = 256;  // Used when a request says max_tokens = 0.
  int32_t max_top_logprobs = 64;     // Capped further by what workers can return.
  // Bytes of prompt text (text, or all chat contents together), checked before tokenizing: a
  // huge prompt is refused in O(1) rather than after the tokenizer has worked through it.
  int64_t max_prompt_bytes = 1 << 20;
};

constexpr int kMaxStopStrings = 16;
// Extra stop ids: a job keeps them as long as it is listed, so their count is bounded.
constexpr int kMaxStopTokenIds = 256;
constexpr int kMaxStopStringBytes = 256;
constexpr int kMaxClientTagBytes = 256;
constexpr int kMaxJobIdBytes = 128;

enum class PromptKind { kText, kChat, kTokens };

struct CheckedChatMessage {
  std::string role;  // One of kChatRoles.
  std::string content;
  std::vector<arbor::v1::ToolCall> tool_calls = {};  // "assistant" only; arguments are objects.
};

// Tools per chat prompt (OpenAI's limit).
inline constexpr int kMaxTools = 128;

inline constexpr const char* kChatRoles[] = {"system", "user", "assistant", "tool"};

// A GenerateRequest that passed every check that does not need the tokenizer.
struct CheckedRequest {
  PromptKind prompt_kind = PromptKind::kText;
  std::string text;                          // kText: non-empty, valid UTF-8.
  std::vector<CheckedChatMessage> messages;  // kChat: >= 1.
  bool add_generation_prompt = false;        // kChat.
  std::vector<std::string> tools;            // kChat: JSON objects, <= kMaxTools.
  bool open_tool_call = false;               // kChat, with add_generation_prompt.
  std::vector<int32_t> prompt_token_ids;     // kTokens: >= 1, each in [0, vocab).
  int32_t max_tokens = 0;                    // As requested; 0 = default (see ResolveMaxTokens).
  uint64_t seed = 0;                         // 0 = the job picks one.
  // The request's policy over the server's defaults: converted, validated and with
  // insert.tokens resolved, once, here; the job runs it as it is.
  entropix::PolicyConfig policy;
  // TRACE's policy.trace.answer_pattern, compiled here once; null when it is empty.
  std::shared_ptr<const base::AnswerPattern> answer_pattern;
  std::vector<int32_t> stop_token_ids;    // Each in [0, vocab).
  std::vector<std::string> stop_strings;  // <= 16, each non-empty and <= 256 bytes.
  bool ignore_eos = false;
  int32_t top_logprobs = 0;                            // [0, max_top_logprobs].
  absl::Duration deadline = absl::InfiniteDuration();  // From submission.
  std::string client_tag;                              // <= 256 bytes.
  arbor::v1::LogitProcessors processors;               // Ranges and token ids checked.
  arbor::v1::OutputConstraint constraint;              // Compiles; unset: none.
  bool reasoning = true;  // Stream the search's traces (GenerateRequest.omit_reasoning unset).
};

// Every check of a GenerateRequest except the prompt length against the context; its policy is
// resolved over `defaults` (the server's, valid, insert.tokens resolved where the server has a
// tokenizer).
absl::StatusOr<CheckedRequest> ValidateGenerateRequest(const arbor::v1::GenerateRequest& request,
                                                       const arbor::v1::ModelInfo& model,
                                                       const ServerLimits& limits,
                                                       const entropix::PolicyConfig& defaults);

// Once the prompt is tokenized: the number of tokens to generate, which must fit the context.
// max_tokens = 0 resolves to min(default_max_tokens, room left). INVALID_ARGUMENT naming
// "prompt" when the prompt leaves no room, "max_tokens" when the request asks for too many.
absl::StatusOr<int32_t> ResolveMaxTokens(const CheckedRequest& request, int64_t prompt_tokens,
                                         const arbor::v1::ModelInfo& model,
                                         const ServerLimits& limits);

// `policy` over `defaults`, validated (entropix::PolicyConfig::Validate, insert.tokens against
// the vocabulary and resolved when inserts are on, the answer pattern compiled into
// `answer_pattern`). `field_prefix` starts every field path in messages ("policy"
// for requests).
absl::StatusOr<entropix::PolicyConfig> ResolvePolicy(
    const arbor::v1::PolicyConfig& policy, const entropix::PolicyConfig& defaults,
    const arbor::v1::ModelInfo& model, const std::string& field_prefix,
    std::shared_ptr<const base::AnswerPattern>* answer_pattern);

// JobRef.job_id (also GetTreeRequest.job_id): non-empty, <= kMaxJobIdBytes.
absl::Status ValidateJobId(const std::string& job_id, const std::string& field);
// limit in [0, 1000], states known.
absl::Status ValidateListJobsRequest(const arbor::v1::ListJobsRequest& request);
// job_id, root >= 0, max_depth >= 0.
absl::Status ValidateGetTreeRequest(const arbor::v1::GetTreeRequest& request);

// True when `bytes` is well-formed UTF-8 (no overlongs, surrogates or values above U+10FFFF).
bool IsValidUtf8(const std::string& bytes);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_REQUEST_VALIDATION_H_
