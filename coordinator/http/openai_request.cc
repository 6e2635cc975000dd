#include "coordinator/http/openai_request.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "coordinator/http/json_body.h"
#include "coordinator/http/json_fields.h"
#include "coordinator/http/openai_sampling.h"
#include "entropix/logit_processors.h"
#include "grammar/exact_json.h"
#include "grammar/json_grammar.h"
#include "nlohmann/json.hpp"
#include "policy/policy_presets.h"

namespace arbor::coordinator::http {
namespace {

// Ordered: a response_format schema's properties are generated in the order the client wrote.
using json = nlohmann::ordered_json;

// OpenAI parameters Arbor does not implement: accepted only at their neutral values.
absl::Status NeutralOnly(Fields& f, Endpoint endpoint) {
  // Accepted and unused: they only label the request on OpenAI's side.
  RETURN_IF_ERROR(f.String("user").status());
  RETURN_IF_ERROR(f.Bool("store").status());
  RETURN_IF_ERROR(f.Object("metadata").status());
  if (endpoint == Endpoint::kCompletions) {  // Chat reads them (tool_request.h).
    if (const json* v = f.Get("tools"); v != nullptr && !(v->is_array() && v->empty())) {
      return FieldError("tools", "only /v1/chat/completions takes tools");
    }
    if (const json* v = f.Get("tool_choice"); v != nullptr && *v != "none" && *v != "auto") {
      return FieldError("tool_choice", "only /v1/chat/completions takes tools");
    }
    RETURN_IF_ERROR(f.Bool("parallel_tool_calls").status());
  }
  ASSIGN_OR_RETURN(std::optional<bool> echo, f.Bool("echo"));
  if (echo.value_or(false)) return FieldError("echo", "not supported; only false");
  ASSIGN_OR_RETURN(std::optional<std::string> suffix, f.String("suffix"));
  if (!suffix.value_or("").empty()) return FieldError("suffix", "not supported");
  return f.Int("best_of", 1, 1).status();
}

absl::StatusOr<std::vector<int32_t>> TokenIds(const json& array, const std::string& field) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_number_integer() || array[i].get<int64_t>() < 0 ||
        array[i].get<int64_t>() > INT32_MAX) {
      return FieldError(absl::StrCat(field, "[", i, "]"), "must be a token id (integer >= 0)");
    }
    ids.push_back(array[i].get<int32_t>());
  }
  return ids;
}

// `prompt`: a string, an array of strings, an array of token ids, or an array of those arrays.
absl::StatusOr<std::vector<arbor::v1::GenerateRequest>> CompletionPrompts(Fields& f) {
  const json* prompt = f.Get("prompt");
  if (prompt == nullptr) return FieldError("prompt", "required");
  std::vector<arbor::v1::GenerateRequest> out;
  auto add_text = [&](const std::string& text) { out.emplace_back().set_text(text); };
  if (prompt->is_string()) {
    add_text(prompt->get<std::string>());
    return out;
  }
  const std::string problem =
      "must be a string, an array of strings, an array of token ids, or an array of such arrays";
  if (!prompt->is_array() || prompt->empty()) return FieldError("prompt", problem);
  if ((*prompt)[0].is_number_integer()) {
    ASSIGN_OR_RETURN(std::vector<int32_t> ids, TokenIds(*prompt, "prompt"));
    *out.emplace_back().mutable_tokens()->mutable_token_ids() = {ids.begin(), ids.end()};
    return out;
  }
  for (size_t i = 0; i < prompt->size(); ++i) {
    const json& p = (*prompt)[i];
    const std::string field = absl::StrCat("prompt[", i, "]");
    if (p.is_string()) {
      add_text(p.get<std::string>());
    } else if (p.is_array() && !p.empty()) {
      ASSIGN_OR_RETURN(std::vector<int32_t> ids, TokenIds(p, field));
      *out.emplace_back().mutable_tokens()->mutable_token_ids() = {ids.begin(), ids.end()};
    } else {
      return FieldError(field, "must be a string or a non-empty array of token ids");
    }
  }
  return out;
}

// `content`: a string, or an array of {"type": "text", "text": ...} parts (concatenated).
absl::StatusOr<std::string> MessageContent(const json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return FieldError(field, "must be a string or an array of text parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    if (!part.is_object() || !(part.contains("type") && part["type"] == "text") ||
        !part.contains("text") || !part["text"].is_string()) {
      return FieldError(absl::StrCat(field, "[", i, "]"),
                        "only {\"type\": \"text\", \"text\": string} parts are supported");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

absl::StatusOr<arbor::v1::GenerateRequest> ChatPrompt(Fields& f) {
  const json* messages = f.Get("messages");
  if (messages == nullptr || !messages->is_array() || messages->empty()) {
    return FieldError("messages", "required: a non-empty array of {role, content}");
  }
  arbor::v1::GenerateRequest request;
  arbor::v1::ChatPrompt& chat = *request.mutable_chat();
  chat.set_add_generation_prompt(true);
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string field = absl::StrCat("messages[", i, "]");
    if (!(*messages)[i].is_object()) return FieldError(field, "must be an object");
    Fields m((*messages)[i], field + ".");
    ASSIGN_OR_RETURN(std::optional<std::string> role, m.String("role"));
    if (!role) return FieldError(m.Name("role"), "required");
    if (*role == "developer") role = "system";  // OpenAI's newer name for the system role.
    if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool") {
      return FieldError(m.Name("role"), "must be system, developer, user, assistant or tool");
    }
    arbor::v1::ChatMessage& message = *chat.add_messages();
    message.set_role(*role);
    if (const json* calls = m.Get("tool_calls"); calls != nullptr) {
      if (*role != "assistant") return FieldError(m.Name("tool_calls"), "only for assistant");
      RETURN_IF_ERROR(ReadMessageToolCalls(*calls, m.Name("tool_calls"), message));
    }
    // An assistant turn that only calls tools has no content (OpenAI sends null).
    const json* content = m.Get("content");
    if (content == nullptr && message.tool_calls().empty()) {
      return FieldError(m.Name("content"), "required");
    }
    if (content != nullptr) {
      ASSIGN_OR_RETURN(*message.mutable_content(), MessageContent(*content, m.Name("content")));
    }
    RETURN_IF_ERROR(m.String("name").status());  // Participant names do not reach the template.
    // Results follow the calls in order; the templates show no ids.
    ASSIGN_OR_RETURN(std::optional<std::string> call_id, m.String("tool_call_id"));
    if (*role == "tool" && !call_id) return FieldError(m.Name("tool_call_id"), "required");
    RETURN_IF_ERROR(m.NothingElse());
  }
  return request;
}

absl::StatusOr<std::vector<std::string>> StopStrings(Fields& f) {
  const json* stop = f.Get("stop");
  if (stop == nullptr) return std::vector<std::string>{};
  if (stop->is_string()) return std::vector<std::string>{stop->get<std::string>()};
  if (!stop->is_array()) return FieldError("stop", "must be a string or an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < stop->size(); ++i) {
    if (!(*stop)[i].is_string()) {
      return FieldError(absl::StrCat("stop[", i, "]"), "must be a string");
    }
    out.push_back((*stop)[i].get<std::string>());
  }
  return out;
}

// What every choice shares: limits, sampling, stops, Arbor's options.
struct Shared {
  int32_t max_tokens = 0;
  arbor::v1::LogitProcessors processors;
  std::optional<int64_t> seed;
  arbor::v1::PolicyConfig policy;
  bool explicit_policy = false;  // `policy` is the client's arbor.policy, not a preset.
  std::vector<std::string> stop;
  std::string client_tag = "openai";
  int64_t deadline_ms = 0;
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  arbor::v1::OutputConstraint constraint;
  std::optional<bool> reasoning;  // arbor.reasoning as given.
};

// OpenAI's structured output: {"type": "text"} (the default), {"type": "json_object"}, or
// {"type": "json_schema", "json_schema": {"name", "description", "schema", "strict"}}. The schema
// is compiled here too, so its errors name the request's field. Decoding is constrained whatever
// `strict` says: strict or not, the output validates.
absl::Status ReadResponseFormat(Fields& f, Shared& shared) {
  ASSIGN_OR_RETURN(const json* format, f.Object("response_format"));
  if (format == nullptr) return absl::OkStatus();
  Fields r(*format, "response_format.");
  ASSIGN_OR_RETURN(std::optional<std::string> type, r.String("type"));
  if (!type) return FieldError("response_format.type", "required");
  if (*type == "json_object") {
    shared.constraint.set_json_object(true);
  } else if (*type == "json_schema") {
    ASSIGN_OR_RETURN(const json* spec, r.Object("json_schema"));
    if (spec == nullptr) return FieldError("response_format.json_schema", "required");
    Fields s(*spec, "response_format.json_schema.");
    RETURN_IF_ERROR(s.String("name").status());
    RETURN_IF_ERROR(s.String("description").status());
    RETURN_IF_ERROR(s.Bool("strict").status());
    const json* schema = s.Get("schema");
    if (schema == nullptr || !(schema->is_object() || schema->is_boolean())) {
      return FieldError("response_format.json_schema.schema", "required: a JSON Schema object");
    }
    RETURN_IF_ERROR(s.NothingElse());
    const std::string text = grammar::DumpExactJson(*schema);
    if (absl::Status compiled = grammar::CompileJsonSchema(text).status(); !compiled.ok()) {
      return FieldError("response_format.json_schema.schema", compiled.message());
    }
    shared.constraint.set_json_schema(text);
  } else if (*type != "text") {
    return FieldError("response_format.type",
                      absl::StrCat("'", *type, "' is not one of text, json_object, json_schema"));
  }
  return r.NothingElse();
}

absl::Status ReadArbor(Fields& f, Shared& shared, OpenAiRequest& out) {
  ASSIGN_OR_RETURN(const json* arbor, f.Object("arbor"));
  if (arbor == nullptr) return absl::OkStatus();
  Fields a(*arbor, "arbor.");
  // A named policy (the presets of `arbor generate --policy_mode`), or a PolicyConfig.
  ASSIGN_OR_RETURN(std::optional<std::string> policy_name, a.String("policy_name"));
  if (policy_name) {
    if (a.Get("policy") != nullptr) {
      return FieldError("arbor.policy_name", "give arbor.policy or arbor.policy_name, not both");
    }
    absl::StatusOr<arbor::v1::PolicyConfig> named = policy::NamedPolicy(*policy_name);
    if (!named.ok()) return FieldError("arbor.policy_name", std::string(named.status().message()));
    shared.policy = *std::move(named);
  }
  if (const json* policy = a.Get("policy"); policy != nullptr) {
    ASSIGN_OR_RETURN(shared.policy, PolicyFromJson(*policy, "arbor.policy"));
    shared.explicit_policy = true;
  }
  ASSIGN_OR_RETURN(std::optional<bool> strategies, a.Bool("token_strategies"));
  out.token_strategies = strategies.value_or(false);
  ASSIGN_OR_RETURN(std::optional<std::string> tag, a.String("client_tag"));
  if (tag) shared.client_tag = *tag;
  ASSIGN_OR_RETURN(std::optional<int64_t> deadline, a.Int("deadline_ms", 0, INT32_MAX));
  shared.deadline_ms = deadline.value_or(0);
  ASSIGN_OR_RETURN(std::optional<bool> ignore_eos, a.Bool("ignore_eos"));
  shared.ignore_eos = ignore_eos.value_or(false);
  ASSIGN_OR_RETURN(shared.reasoning, a.Bool("reasoning"));
  if (const json* ids = a.Get("stop_token_ids"); ids != nullptr) {
    if (!ids->is_array()) return FieldError("arbor.stop_token_ids", "must be an array");
    ASSIGN_OR_RETURN(shared.stop_token_ids, TokenIds(*ids, "arbor.stop_token_ids"));
  }
  return a.NothingElse();
}

// The sampling fields, range-checked, and their meaning under the request's policy
// (openai_sampling.h). top_k −1 or 0 (other servers' "off") keeps every candidate the sampler
// can take.
absl::Status ReadSampling(Fields& f, const arbor::v1::PolicyConfig& server_policy, Shared& shared) {
  SamplingFields fields;
  ASSIGN_OR_RETURN(fields.temperature, f.Number("temperature", 0, 2));
  ASSIGN_OR_RETURN(fields.top_p, f.Number("top_p", 0, 1));
  ASSIGN_OR_RETURN(std::optional<int64_t> top_k, f.Int("top_k", -1, 1024));
  ASSIGN_OR_RETURN(fields.min_p, f.Number("min_p", 0, 1));
  if (fields.top_p && *fields.top_p == 0) return FieldError("top_p", "must be in (0, 1]");
  if (fields.min_p && *fields.min_p == 1) return FieldError("min_p", "must be in [0, 1)");
  if (top_k) fields.top_k = static_cast<int32_t>(*top_k <= 0 ? 1024 : *top_k);
  return ApplySampling(fields, shared.explicit_policy, server_policy, shared.policy);
}

// OpenAI's penalties and logit_bias, and the repetition_penalty other servers take, as the
// worker's logit processors (ranges rechecked, and token ids against the vocabulary, by the
// service's validation).
absl::Status ReadProcessors(Fields& f, Shared& shared) {
  arbor::v1::LogitProcessors& p = shared.processors;
  ASSIGN_OR_RETURN(std::optional<double> frequency, f.Number("frequency_penalty", -2, 2));
  if (frequency && *frequency != 0) p.set_frequency_penalty(static_cast<float>(*frequency));
  ASSIGN_OR_RETURN(std::optional<double> presence, f.Number("presence_penalty", -2, 2));
  if (presence && *presence != 0) p.set_presence_penalty(static_cast<float>(*presence));
  ASSIGN_OR_RETURN(std::optional<double> repetition, f.Number("repetition_penalty", 0, 2));
  if (repetition && *repetition == 0) return FieldError("repetition_penalty", "must be in (0, 2]");
  if (repetition && *repetition != 1) p.set_repetition_penalty(static_cast<float>(*repetition));
  ASSIGN_OR_RETURN(const json* bias, f.Object("logit_bias"));
  if (bias == nullptr) return absl::OkStatus();
  if (bias->size() > static_cast<size_t>(entropix::kMaxLogitBias)) {
    return FieldError("logit_bias", absl::StrCat("at most ", entropix::kMaxLogitBias, " entries"));
  }
  for (const auto& [key, value] : bias->items()) {
    const std::string field = absl::StrCat("logit_bias.", key);
    int32_t token = 0;
    if (!absl::SimpleAtoi(key, &token) || token < 0) {
      return FieldError(field, "keys must be token ids (non-negative integers)");
    }
    if (!value.is_number() || !(std::abs(value.get<double>()) <= 100)) {
      return FieldError(field, "must be a number in [-100, 100]");
    }
    (*p.mutable_logit_bias())[token] = value.get<float>();
  }
  return absl::OkStatus();
}

absl::Status ReadLogprobs(Fields& f, Endpoint endpoint, OpenAiRequest& out) {
  if (endpoint == Endpoint::kCompletions) {
    ASSIGN_OR_RETURN(std::optional<int64_t> logprobs, f.Int("logprobs", 0, kMaxTopLogprobs));
    out.logprobs = logprobs ? static_cast<int>(*logprobs) : -1;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::optional<bool> logprobs, f.Bool("logprobs"));
  ASSIGN_OR_RETURN(std::optional<int64_t> top, f.Int("top_logprobs", 0, kMaxTopLogprobs));
  if (top && !logprobs.value_or(false)) {
    return FieldError("top_logprobs", "requires logprobs: true");
  }
  out.logprobs = logprobs.value_or(false) ? static_cast<int>(top.value_or(0)) : -1;
  return absl::OkStatus();
}

absl::Status ReadLimits(Fields& f, Endpoint endpoint, Shared& shared, OpenAiRequest& out) {
  ASSIGN_OR_RETURN(std::optional<int64_t> max_tokens, f.Int("max_tokens", 1, INT32_MAX));
  if (endpoint == Endpoint::kChatCompletions) {
    ASSIGN_OR_RETURN(std::optional<int64_t> max_completion,
                     f.Int("max_completion_tokens", 1, INT32_MAX));
    if (max_tokens && max_completion && *max_tokens != *max_completion) {
      return FieldError("max_completion_tokens", "differs from max_tokens; give one");
    }
    if (max_completion) max_tokens = max_completion;
  } else if (!max_tokens) {
    max_tokens = 16;  // OpenAI's documented default for completions.
  }
  shared.max_tokens = static_cast<int32_t>(max_tokens.value_or(0));  // 0: server default.
  ASSIGN_OR_RETURN(std::optional<int64_t> n, f.Int("n", 1, kMaxChoices));
  out.n = static_cast<int>(n.value_or(1));
  ASSIGN_OR_RETURN(shared.seed, f.Int("seed", INT64_MIN, INT64_MAX));
  ASSIGN_OR_RETURN(shared.stop, StopStrings(f));
  ASSIGN_OR_RETURN(std::optional<bool> stream, f.Bool("stream"));
  out.stream = stream.value_or(false);
  ASSIGN_OR_RETURN(const json* stream_options, f.Object("stream_options"));
  if (stream_options != nullptr) {
    Fields s(*stream_options, "stream_options.");
    ASSIGN_OR_RETURN(std::optional<bool> usage, s.Bool("include_usage"));
    out.include_usage = usage.value_or(false);
    RETURN_IF_ERROR(s.NothingElse());
  }
  return absl::OkStatus();
}

void Fill(const Shared& shared, const OpenAiRequest& out, arbor::v1::GenerateRequest& r) {
  r.set_max_tokens(shared.max_tokens);
  *r.mutable_policy() = shared.policy;
  *r.mutable_processors() = shared.processors;
  for (const std::string& s : shared.stop) r.mutable_stop()->add_stop_strings(s);
  for (int32_t id : shared.stop_token_ids) r.mutable_stop()->add_stop_token_ids(id);
  r.mutable_stop()->set_ignore_eos(shared.ignore_eos);
  // The token's own text comes with its alternatives, so logprobs: 0 still asks for one.
  r.set_top_logprobs(out.logprobs < 0 ? 0 : std::max(1, out.logprobs));
  r.set_deadline_ms(shared.deadline_ms);
  r.set_client_tag(shared.client_tag);
  r.set_omit_reasoning(!out.reasoning);
  if (shared.constraint.kind_case() != arbor::v1::OutputConstraint::KIND_NOT_SET) {
    *r.mutable_constraint() = shared.constraint;
  }
}

}  // namespace

absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(absl::string_view body, Endpoint endpoint,
                                                 const arbor::v1::PolicyConfig& server_policy,
                                                 model::ToolFormat tool_format) {
  ASSIGN_OR_RETURN(const json parsed, ParseJsonBody(body));
  if (!parsed.is_object()) return FieldError("body", "must be a JSON object");
  OpenAiRequest out;
  out.endpoint = endpoint;
  Fields f(parsed, "");
  ASSIGN_OR_RETURN(std::optional<std::string> model, f.String("model"));
  out.model = model.value_or("");
  Shared shared;
  RETURN_IF_ERROR(ReadArbor(f, shared, out));
  RETURN_IF_ERROR(ReadSampling(f, server_policy, shared));
  RETURN_IF_ERROR(ReadLogprobs(f, endpoint, out));
  RETURN_IF_ERROR(ReadLimits(f, endpoint, shared, out));
  // A stream shows the search's traces while the answer is chosen; a whole answer only when
  // asked, since nothing is waiting to be shown.
  out.reasoning = shared.reasoning.value_or(out.stream);
  RETURN_IF_ERROR(ReadProcessors(f, shared));
  RETURN_IF_ERROR(ReadResponseFormat(f, shared));
  RETURN_IF_ERROR(NeutralOnly(f, endpoint));
  std::vector<arbor::v1::GenerateRequest> prompts;
  if (endpoint == Endpoint::kCompletions) {
    ASSIGN_OR_RETURN(prompts, CompletionPrompts(f));
  } else {
    ASSIGN_OR_RETURN(prompts.emplace_back(), ChatPrompt(f));
    arbor::v1::ChatPrompt& chat = *prompts.back().mutable_chat();
    RETURN_IF_ERROR(ReadTools(f, tool_format, out.tools, chat));
    RETURN_IF_ERROR(ApplyTools(out.tools, chat, shared.constraint, shared.stop));
  }
  RETURN_IF_ERROR(f.NothingElse());
  if (prompts.size() * out.n > static_cast<size_t>(kMaxChoices)) {
    return FieldError("n", absl::StrCat(prompts.size(), " prompts × n ", out.n, " exceeds ",
                                        kMaxChoices, " choices per request"));
  }
  ASSIGN_OR_RETURN(const ChoicePlan plan,
                   PlanChoices(out.n, shared.seed, shared.policy, server_policy));
  for (arbor::v1::GenerateRequest& prompt : prompts) {
    for (int j = 0; j < out.n; ++j) {
      arbor::v1::GenerateRequest& choice = out.choices.emplace_back(prompt);
      Fill(shared, out, choice);
      SetChoice(plan, j, choice);
    }
  }
  return out;
}

}  // namespace arbor::coordinator::http
