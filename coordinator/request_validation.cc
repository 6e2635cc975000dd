#include "coordinator/request_validation.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace arbor::coordinator {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// One rule of the policy table. `path` is relative to PolicyConfig, dot-separated; a last
// segment "*" applies the rule to every numeric field of that message.
struct FieldRule {
  const char* path;
  enum Kind { kRange, kEnum } kind;
  double lo = 0;
  double hi = 0;
  bool lo_open = false;  // (lo, ... instead of [lo, ...
  bool hi_open = false;  // ..., hi) instead of ..., hi]
};

constexpr double kEntropyMax = 64;       // bits; log2 of any real vocabulary is far below.
constexpr double kVarentropyMax = 4096;  // bits².
constexpr double kCoefficientMax = 100;  // Canonical coefficients and weights are O(1).

// The ranges of proto/arbor/v1/entropix.proto, in one place. Keep in sync with its comments.
const FieldRule kPolicyRules[] = {
    {"mode", FieldRule::kEnum},
    {"sampling.temperature", FieldRule::kRange, 0, 10, true, false},
    {"sampling.top_p", FieldRule::kRange, 0, 1, true, false},
    {"sampling.top_k", FieldRule::kRange, 1, 1024},
    {"sampling.min_p", FieldRule::kRange, 0, 1, false, true},
    {"thresholds.lelv_entropy", FieldRule::kRange, 0, kEntropyMax},
    {"thresholds.lelv_varentropy", FieldRule::kRange, 0, kVarentropyMax},
    {"thresholds.helv_entropy", FieldRule::kRange, 0, kEntropyMax},
    {"thresholds.helv_varentropy", FieldRule::kRange, 0, kVarentropyMax},
    {"thresholds.lehv_entropy", FieldRule::kRange, 0, kEntropyMax},
    {"thresholds.lehv_varentropy", FieldRule::kRange, 0, kVarentropyMax},
    {"thresholds.hehv_entropy", FieldRule::kRange, 0, kEntropyMax},
    {"thresholds.hehv_varentropy", FieldRule::kRange, 0, kVarentropyMax},
    {"coefficients.*", FieldRule::kRange, -kCoefficientMax, kCoefficientMax},
    {"coefficients.lehv_top_k_min", FieldRule::kRange, 1, 1024},
    {"branch.width", FieldRule::kRange, 2, 64},
    {"branch.mode", FieldRule::kEnum},
    {"branch.max_len", FieldRule::kRange, 1, 1024},
    {"branch.calm_entropy", FieldRule::kRange, 0, kEntropyMax},
    {"branch.calm_varentropy", FieldRule::kRange, 0, kVarentropyMax},
    {"branch.calm_steps", FieldRule::kRange, 1, 64},
    {"branch.max_depth", FieldRule::kRange, 1, 8},
    {"branch.candidate_min_p", FieldRule::kRange, 0, 1, false, true},
    {"insert.cooldown", FieldRule::kRange, 0, 4096},
    {"insert.max_per_job", FieldRule::kRange, 0, 1024},
    {"backspace.max_per_job", FieldRule::kRange, 0, 1024},
    {"adaptive.*", FieldRule::kRange, -kCoefficientMax, kCoefficientMax},
    {"adaptive.n_samples", FieldRule::kRange, 1, 64},
    {"attention_mode", FieldRule::kEnum},
    {"reference_len", FieldRule::kRange, 1, 1 << 20},
};

// Integers print as integers ("1048576", not "1.04858e+06").
std::string FormatNumber(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return absl::StrCat(v);
}

std::string FormatRange(const FieldRule& rule) {
  return absl::StrCat(rule.lo_open ? "(" : "[", FormatNumber(rule.lo), ", ", FormatNumber(rule.hi),
                      rule.hi_open ? ")" : "]");
}

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// Checks one scalar field of `message` against `rule`, if the field is set.
absl::Status CheckField(const Message& message, const FieldDescriptor* field, const FieldRule& rule,
                        const std::string& name) {
  const Reflection* reflection = message.GetReflection();
  if (field->is_repeated() || field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    return absl::InternalError(absl::StrCat("validation rule for ", name, " is not a scalar"));
  }
  if (field->has_presence() && !reflection->HasField(message, field)) return absl::OkStatus();
  if (rule.kind == FieldRule::kEnum) {
    const int value = reflection->GetEnumValue(message, field);
    if (field->enum_type()->FindValueByNumber(value) == nullptr) {
      return Invalid(name, absl::StrCat(value, " is not a valid ", field->enum_type()->name()));
    }
    return absl::OkStatus();
  }
  double value = 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_FLOAT:
      value = reflection->GetFloat(message, field);
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      value = reflection->GetDouble(message, field);
      break;
    case FieldDescriptor::CPPTYPE_INT32:
      value = reflection->GetInt32(message, field);
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      value = static_cast<double>(reflection->GetInt64(message, field));
      break;
    default:  // Enums, bools and strings carry no numeric range: nothing to check.
      return absl::OkStatus();
  }
  if (!std::isfinite(value)) return Invalid(name, absl::StrCat(value, " is not a finite number"));
  const bool below = rule.lo_open ? value <= rule.lo : value < rule.lo;
  const bool above = rule.hi_open ? value >= rule.hi : value > rule.hi;
  if (below || above) {
    return Invalid(name, absl::StrCat(FormatNumber(value), " is outside ", FormatRange(rule)));
  }
  return absl::OkStatus();
}

// Resolves `rule.path` inside `policy` and checks the field(s) it names. Field names are
// resolved even when unset, so a misspelt rule fails every request instead of checking nothing.
absl::Status ApplyRule(const Message& policy, const FieldRule& rule, const std::string& prefix) {
  const Message* message = &policy;
  std::string name = prefix;
  const std::vector<std::string> segments = absl::StrSplit(rule.path, '.');
  for (size_t i = 0; i < segments.size(); ++i) {
    const bool last = i + 1 == segments.size();
    if (last && segments[i] == "*") {
      const auto* descriptor = message->GetDescriptor();
      for (int f = 0; f < descriptor->field_count(); ++f) {
        const FieldDescriptor* field = descriptor->field(f);
        if (field->is_repeated() || field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          continue;
        }
        RETURN_IF_ERROR(CheckField(*message, field, rule, absl::StrCat(name, ".", field->name())));
      }
      return absl::OkStatus();
    }
    const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(segments[i]);
    if (field == nullptr) {
      return absl::InternalError(absl::StrCat("validation rule names unknown field ", rule.path));
    }
    name = absl::StrCat(name, ".", field->name());
    if (last) return CheckField(*message, field, rule, name);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
      return absl::InternalError(absl::StrCat("validation rule path ", rule.path, " is bad"));
    }
    message = &message->GetReflection()->GetMessage(*message, field);
  }
  return absl::OkStatus();
}

absl::Status CheckTokenIds(const google::protobuf::RepeatedField<int32_t>& ids,
                           const arbor::v1::ModelInfo& model, const std::string& field) {
  for (int i = 0; i < ids.size(); ++i) {
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

absl::Status CheckPrompt(const arbor::v1::GenerateRequest& request,
                         const arbor::v1::ModelInfo& model, const ServerLimits& limits,
                         CheckedRequest& out) {
  switch (request.prompt_case()) {
    case arbor::v1::GenerateRequest::kText:
      if (request.text().empty()) return Invalid("text", "must not be empty");
      RETURN_IF_ERROR(
          CheckPromptBytes(static_cast<int64_t>(request.text().size()), limits.max_prompt_bytes,
                           "text"));
      if (!IsValidUtf8(request.text())) return Invalid("text", "is not valid UTF-8");
      out.prompt_kind = PromptKind::kText;
      out.text = request.text();
      return absl::OkStatus();
    case arbor::v1::GenerateRequest::kChat: {
      const auto& messages = request.chat().messages();
      if (messages.empty()) return Invalid("chat.messages", "needs at least 1 message");
      int64_t bytes = 0;
      for (const auto& message : messages) bytes += static_cast<int64_t>(message.content().size());
      RETURN_IF_ERROR(CheckPromptBytes(bytes, limits.max_prompt_bytes, "chat.messages"));
      for (int i = 0; i < messages.size(); ++i) {
        const std::string field = absl::StrCat("chat.messages[", i, "]");
        bool known_role = false;
        for (const char* role : kChatRoles) known_role |= messages[i].role() == role;
        if (!known_role) {
          return Invalid(field + ".role",
                         absl::StrCat("'", messages[i].role(),
                                      "' is not one of system, user, assistant, tool"));
        }
        if (!IsValidUtf8(messages[i].content())) {
          return Invalid(field + ".content", "is not valid UTF-8");
        }
        out.messages.push_back({messages[i].role(), messages[i].content()});
      }
      out.prompt_kind = PromptKind::kChat;
      out.add_generation_prompt = request.chat().add_generation_prompt();
      return absl::OkStatus();
    }
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
    return Invalid("stop.stop_token_ids", absl::StrCat(stop.stop_token_ids_size(),
                                                       " ids; at most ", kMaxStopTokenIds));
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

}  // namespace

absl::Status ValidatePolicy(const arbor::v1::PolicyConfig& policy,
                            const arbor::v1::ModelInfo& model, const std::string& field_prefix) {
  for (const FieldRule& rule : kPolicyRules) {
    RETURN_IF_ERROR(ApplyRule(policy, rule, field_prefix));
  }
  return CheckTokenIds(policy.insert().tokens(), model, field_prefix + ".insert.tokens");
}

absl::StatusOr<CheckedRequest> ValidateGenerateRequest(const arbor::v1::GenerateRequest& request,
                                                       const arbor::v1::ModelInfo& model,
                                                       const ServerLimits& limits) {
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
  RETURN_IF_ERROR(ValidatePolicy(request.policy(), model, "policy"));
  RETURN_IF_ERROR(CheckStop(request.stop(), model, out));
  out.max_tokens = request.max_tokens();
  out.seed = request.seed();
  out.policy = request.policy();
  out.top_logprobs = request.top_logprobs();
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
  if (request.client_tag().size() > kMaxClientTagBytes) {
    return Invalid("client_tag", absl::StrCat(request.client_tag().size(), " bytes; at most ",
                                              kMaxClientTagBytes));
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
