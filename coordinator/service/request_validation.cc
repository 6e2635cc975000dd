#include "coordinator/service/request_validation.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/answer_pattern.h"
#include "base/status_macros.h"
#include "entropix/policy_config.h"
#include "nlohmann/json.hpp"
#include "policy/constraint_convert.h"
#include "policy/policy_convert.h"

namespace arbor::coordinator {
namespace {

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

absl::Status CheckTokenIds(absl::Span<const int32_t> ids, const arbor::v1::ModelInfo& model,
                           const std::string& field) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= model.vocab_size()) {
      return Invalid(absl::StrCat(field, "[", i, "]"),
                     absl::StrCat(ids[i], " is outside [0, ", model.vocab_size(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckModel(const arbor::v1::ModelInfo& model) {
  if (model.vocab_size() <= 0 || model.max_context() <= 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("model limits unknown (vocab_size ", model.vocab_size(), ", max_context ",
                     model.max_context(), "): no worker has reported its model yet"));
  }
  return absl::OkStatus();
}

absl::Status CheckPromptBytes(int64_t bytes, int64_t limit, const char* field) {
  if (bytes <= limit) return absl::OkStatus();
  return Invalid(field, absl::StrCat(bytes, " bytes of text; at most ", limit,
                                     " (the server's --max_prompt_bytes)"));
}

// A JSON object as text (a tool, a call's arguments).
bool IsJsonObject(const std::string& text) {
  const nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return value.is_object();
}

absl::Status CheckChatMessage(const arbor::v1::ChatMessage& message, const std::string& field,
                              CheckedChatMessage& out) {
  bool known_role = false;
  for (const char* role : kChatRoles) known_role |= message.role() == role;
  if (!known_role) {
    return Invalid(field + ".role", absl::StrCat("'", message.role(),
                                                 "' is not one of system, user, assistant, tool"));
  }
  if (!IsValidUtf8(message.content())) return Invalid(field + ".content", "is not valid UTF-8");
  if (!message.tool_calls().empty() && message.role() != "assistant") {
    return Invalid(field + ".tool_calls", "only assistant messages make tool calls");
  }
  for (int i = 0; i < message.tool_calls().size(); ++i) {
    const arbor::v1::ToolCall& call = message.tool_calls(i);
    if (call.name().empty() || !IsValidUtf8(call.name()) || !IsJsonObject(call.arguments())) {
      return Invalid(absl::StrCat(field, ".tool_calls[", i, "]"),
                     "needs a name and arguments that are a JSON object");
    }
  }
  out = {message.role(), message.content(), {message.tool_calls().begin(),
                                              message.tool_calls().end()}};
  return absl::OkStatus();
}

absl::Status CheckChat(const arbor::v1::ChatPrompt& chat, const ServerLimits& limits,
                       CheckedRequest& out) {
  const auto& messages = chat.messages();
  if (messages.empty()) return Invalid("chat.messages", "needs at least 1 message");
  int64_t bytes = 0;
  for (const auto& message : messages) {
    bytes += static_cast<int64_t>(message.content().size());
    for (const auto& call : message.tool_calls()) {
      bytes += static_cast<int64_t>(call.name().size() + call.arguments().size());
    }
  }
  for (const std::string& tool : chat.tools()) bytes += static_cast<int64_t>(tool.size());
  RETURN_IF_ERROR(CheckPromptBytes(bytes, limits.max_prompt_bytes, "chat.messages"));
  out.messages.resize(messages.size());
  for (int i = 0; i < messages.size(); ++i) {
    RETURN_IF_ERROR(
        CheckChatMessage(messages[i], absl::StrCat("chat.messages[", i, "]"), out.messages[i]));
  }
  if (chat.tools().size() > kMaxTools) {
    return Invalid("chat.tools", absl::StrCat("at most ", kMaxTools, " tools"));
  }
  for (int i = 0; i < chat.tools().size(); ++i) {
    if (!IsJsonObject(chat.tools(i))) {
      return Invalid(absl::StrCat("chat.tools[", i, "]"), "must be a JSON object");
    }
  }
  if (chat.open_tool_call() && !chat.add_generation_prompt()) {
    return Invalid("chat.open_tool_call", "needs add_generation_prompt");
  }
  out.prompt_kind = PromptKind::kChat;
  out.add_generation_prompt = chat.add_generation_prompt();
  out.tools.assign(chat.tools().begin(), chat.tools().end());
  out.open_tool_call = chat.open_tool_call();
  return absl::OkStatus();
}

absl::Status CheckPrompt(const arbor::v1::GenerateRequest& request,
                         const arbor::v1::ModelInfo& model, const ServerLimits& limits,
                         CheckedRequest& out) {
  switch (request.prompt_case()) {
    case arbor::v1::GenerateRequest::kText:
      if (request.text().empty()) return Invalid("text", "must not be empty");
      RETURN_IF_ERROR(CheckPromptBytes(static_cast<int64_t>(request.text().size()),
                                       limits.max_prompt_bytes, "text"));
      if (!IsValidUtf8(request.text())) return Invalid("text", "is not valid UTF-8");
      out.prompt_kind = PromptKind::kText;
      out.text = request.text();
      return absl::OkStatus();
    case arbor::v1::GenerateRequest::kChat:
      return CheckChat(request.chat(), limits, out);
    case arbor::v1::GenerateRequest::kTokens:
      if (request.tokens().token_ids().empty()) {
        return Invalid("tokens.token_ids", "needs at least 1 token id");
      }
      RETURN_IF_ERROR(CheckTokenIds(request.tokens().token_ids(), model, "tokens.token_ids"));
      out.prompt_kind = PromptKind::kTokens;
      out.prompt_token_ids.assign(request.tokens().token_ids().begin(),
                                  request.tokens().token_ids().end());
      return absl::OkStatus();
    case arbor::v1::GenerateRequest::PROMPT_NOT_SET:
      break;
  }
  return Invalid("prompt", "one of text, chat or tokens is required");
}

absl::Status CheckStop(const arbor::v1::StopConditions& stop, const arbor::v1::ModelInfo& model,
                       CheckedRequest& out) {
  if (stop.stop_token_ids_size() > kMaxStopTokenIds) {
    return Invalid("stop.stop_token_ids",
                   absl::StrCat(stop.stop_token_ids_size(), " ids; at most ", kMaxStopTokenIds));
  }
  RETURN_IF_ERROR(CheckTokenIds(stop.stop_token_ids(), model, "stop.stop_token_ids"));
  if (stop.stop_strings_size() > kMaxStopStrings) {
    return Invalid("stop.stop_strings",
                   absl::StrCat(stop.stop_strings_size(), " strings; at most ", kMaxStopStrings));
  }
  for (int i = 0; i < stop.stop_strings_size(); ++i) {
    const std::string field = absl::StrCat("stop.stop_strings[", i, "]");
    const std::string& s = stop.stop_strings(i);
    if (s.empty()) return Invalid(field, "must not be empty");
    if (s.size() > kMaxStopStringBytes) {
      return Invalid(field, absl::StrCat(s.size(), " bytes; at most ", kMaxStopStringBytes));
    }
    if (!IsValidUtf8(s)) return Invalid(field, "is not valid UTF-8");
  }
  out.stop_token_ids.assign(stop.stop_token_ids().begin(), stop.stop_token_ids().end());
  out.stop_strings.assign(stop.stop_strings().begin(), stop.stop_strings().end());
  out.ignore_eos = stop.ignore_eos();
  return absl::OkStatus();
}

// A constraint compiles (the error names the schema's keyword), and its document can end: the
// model's end token must stop the job.
absl::Status CheckConstraint(const arbor::v1::GenerateRequest& request,
                             const arbor::v1::ModelInfo& model) {
  if (!request.has_constraint()) return absl::OkStatus();
  RETURN_IF_ERROR(policy::CompileConstraintProto(request.constraint(), "constraint").status());
  if (request.stop().ignore_eos()) {
    return Invalid("stop.ignore_eos", "a constrained output ends with the end token; unset it");
  }
  if (model.eos_token_ids().empty() && request.stop().stop_token_ids().empty()) {
    return absl::FailedPreconditionError(
        "constraint: the model has no end-of-sequence token to end the document with; give "
        "stop.stop_token_ids");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<entropix::PolicyConfig> ResolvePolicy(
    const arbor::v1::PolicyConfig& policy, const entropix::PolicyConfig& defaults,
    const arbor::v1::ModelInfo& model, const std::string& field_prefix,
    std::shared_ptr<const base::AnswerPattern>* answer_pattern) {
  // The policy library's own check of the whole result, with the ranges it enforces.
  absl::StatusOr<entropix::PolicyConfig> config = policy::PolicyFromProto(policy, defaults);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field_prefix, ".", config.status().message()));
  }
  RETURN_IF_ERROR(CheckTokenIds(config->insert.tokens, model, field_prefix + ".insert.tokens"));
  if (config->insert.tokens.empty() && config->insert.max_per_job > 0) {
    return Invalid(field_prefix + ".insert.tokens",
                   "required when insert.max_per_job > 0 on a coordinator without a tokenizer "
                   "(start it with --model DIR to default to \" ...\")");
  }
  if (config->mode == entropix::PolicyMode::kTrace && !config->trace.answer_pattern.empty()) {
    absl::StatusOr<std::shared_ptr<const base::AnswerPattern>> pattern =
        base::AnswerPattern::Compile(config->trace.answer_pattern);
    if (!pattern.ok()) {
      return Invalid(field_prefix + ".trace.answer_pattern",
                     std::string(pattern.status().message()));
    }
    *answer_pattern = *std::move(pattern);
  }
  return config;
}

absl::StatusOr<CheckedRequest> ValidateGenerateRequest(const arbor::v1::GenerateRequest& request,
                                                       const arbor::v1::ModelInfo& model,
                                                       const ServerLimits& limits,
                                                       const entropix::PolicyConfig& defaults) {
  RETURN_IF_ERROR(CheckModel(model));
  CheckedRequest out;
  RETURN_IF_ERROR(CheckPrompt(request, model, limits, out));
  if (request.max_tokens() < 0 || request.max_tokens() >= model.max_context()) {
    return Invalid("max_tokens", absl::StrCat(request.max_tokens(), " is outside [0, ",
                                              model.max_context() - 1, "] (0 = default)"));
  }
  const int32_t max_top_logprobs = std::min(limits.max_top_logprobs, 64);
  if (request.top_logprobs() < 0 || request.top_logprobs() > max_top_logprobs) {
    return Invalid("top_logprobs",
                   absl::StrCat(request.top_logprobs(), " is outside [0, ", max_top_logprobs, "]"));
  }
  if (request.deadline_ms() < 0) {
    return Invalid("deadline_ms", absl::StrCat(request.deadline_ms(), " must be >= 0 (0 = none)"));
  }
  if (request.client_tag().size() > kMaxClientTagBytes) {
    return Invalid("client_tag", absl::StrCat(request.client_tag().size(), " bytes; at most ",
                                              kMaxClientTagBytes));
  }
  ASSIGN_OR_RETURN(out.policy,
                   ResolvePolicy(request.policy(), defaults, model, "policy", &out.answer_pattern));
  RETURN_IF_ERROR(CheckStop(request.stop(), model, out));
  RETURN_IF_ERROR(policy::LogitProcessorsFromProto(request.processors(), model.vocab_size(),
                                                   /*prompt_length=*/0, "processors.")
                      .status());
  out.processors = request.processors();
  RETURN_IF_ERROR(CheckConstraint(request, model));
  out.constraint = request.constraint();
  out.max_tokens = request.max_tokens();
  out.seed = request.seed();
  out.top_logprobs = request.top_logprobs();
  out.reasoning = !request.omit_reasoning();
  out.deadline = request.deadline_ms() == 0 ? absl::InfiniteDuration()
                                            : absl::Milliseconds(request.deadline_ms());
  out.client_tag = request.client_tag();
  return out;
}

absl::StatusOr<int32_t> ResolveMaxTokens(const CheckedRequest& request, int64_t prompt_tokens,
                                         const arbor::v1::ModelInfo& model,
                                         const ServerLimits& limits) {
  RETURN_IF_ERROR(CheckModel(model));
  const int64_t room = model.max_context() - prompt_tokens;
  if (room < 1) {
    return Invalid("prompt", absl::StrCat(prompt_tokens, " tokens leave no room to generate in ",
                                          "the model's context of ", model.max_context()));
  }
  if (request.max_tokens == 0) {
    return static_cast<int32_t>(std::min<int64_t>(std::max(1, limits.default_max_tokens), room));
  }
  if (request.max_tokens > room) {
    return Invalid("max_tokens",
                   absl::StrCat(request.max_tokens, " is outside [1, ", room, "] (context ",
                                model.max_context(), " - prompt ", prompt_tokens, " tokens)"));
  }
  return request.max_tokens;
}

absl::Status ValidateJobId(const std::string& job_id, const std::string& field) {
  if (job_id.empty()) return Invalid(field, "must not be empty");
  if (job_id.size() > kMaxJobIdBytes) {
    return Invalid(field, absl::StrCat(job_id.size(), " bytes; at most ", kMaxJobIdBytes));
  }
  return absl::OkStatus();
}

absl::Status ValidateListJobsRequest(const arbor::v1::ListJobsRequest& request) {
  if (request.limit() < 0 || request.limit() > 1000) {
    return Invalid("limit", absl::StrCat(request.limit(), " is outside [0, 1000] (0 = 100)"));
  }
  for (int i = 0; i < request.states_size(); ++i) {
    if (!arbor::v1::JobState_IsValid(request.states(i))) {
      return Invalid(absl::StrCat("states[", i, "]"),
                     absl::StrCat(request.states(i), " is not a valid JobState"));
    }
  }
  // The owner and model are names, bounded as a tag is.
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{"client_tag", &request.client_tag()},
        {"owner", &request.owner()},
        {"model", &request.model()}}) {
    if (value->size() > kMaxClientTagBytes) {
      return Invalid(field, absl::StrCat(value->size(), " bytes; at most ", kMaxClientTagBytes));
    }
  }
  if (request.created_after_unix_ms() < 0 || request.created_before_unix_ms() < 0) {
    return Invalid(
        request.created_after_unix_ms() < 0 ? "created_after_unix_ms" : "created_before_unix_ms",
        "must be >= 0 (0 = any)");
  }
  return absl::OkStatus();
}

absl::Status ValidateGetTreeRequest(const arbor::v1::GetTreeRequest& request) {
  RETURN_IF_ERROR(ValidateJobId(request.job_id(), "job_id"));
  if (request.root() < 0) return Invalid("root", absl::StrCat(request.root(), " must be >= 0"));
  if (request.max_depth() < 0) {
    return Invalid("max_depth", absl::StrCat(request.max_depth(), " must be >= 0 (0 = all)"));
  }
  return absl::OkStatus();
}

bool IsValidUtf8(const std::string& bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    int len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace arbor::coordinator
