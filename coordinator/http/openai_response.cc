#include "coordinator/http/openai_response.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace arbor::coordinator::http {
namespace {

// Objects with sorted keys, as these responses are written; the request readers beside this file
// keep the client's order (ordered_json).
using PlainJson = nlohmann::json;

bool IsChat(const ResponseContext& c) { return c.request->endpoint == Endpoint::kChatCompletions; }

// "STRATEGY_HOT_SAMPLE" → "hot_sample", the names of StrategyCounts' fields.
std::string LowerStrategyName(arbor::v1::Strategy strategy) {
  std::string name = arbor::v1::Strategy_Name(strategy);
  if (absl::StartsWith(name, "STRATEGY_")) name = name.substr(9);
  return absl::AsciiStrToLower(name);
}

std::string FinishReason(arbor::v1::FinishReason reason) {
  switch (reason) {
    case arbor::v1::FINISH_REASON_MAX_TOKENS:
    case arbor::v1::FINISH_REASON_CONTEXT:
    case arbor::v1::FINISH_REASON_DEADLINE:
      return "length";
    default:
      return "stop";
  }
}

PlainJson Bytes(const std::string& text) {
  PlainJson bytes = PlainJson::array();
  for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// Chat's shape: {"content": [{token, logprob, bytes, top_logprobs: [...]}, ...]}.
PlainJson ChatLogprobs(const std::vector<views::FinalToken>& tokens, int top) {
  PlainJson content = PlainJson::array();
  for (const views::FinalToken& t : tokens) {
    PlainJson alternatives = PlainJson::array();
    for (size_t i = 0; i < t.top.size() && static_cast<int>(i) < top; ++i) {
      alternatives.push_back({{"token", t.top[i].text()},
                              {"logprob", t.top[i].logprob()},
                              {"bytes", Bytes(t.top[i].text())}});
    }
    content.push_back({{"token", t.text},
                       {"logprob", t.logprob},
                       {"bytes", Bytes(t.text)},
                       {"top_logprobs", std::move(alternatives)}});
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

// The completions shape: parallel arrays, alternatives as {text: logprob} maps.
PlainJson CompletionLogprobs(const std::vector<views::FinalToken>& tokens, int top,
                             size_t* offset) {
  PlainJson out = {{"tokens", PlainJson::array()},
                   {"token_logprobs", PlainJson::array()},
                   {"top_logprobs", PlainJson::array()},
                   {"text_offset", PlainJson::array()}};
  for (const views::FinalToken& t : tokens) {
    out["tokens"].push_back(t.text);
    out["token_logprobs"].push_back(t.logprob);
    PlainJson alternatives = PlainJson::object();
    for (size_t i = 0; i < t.top.size() && static_cast<int>(i) < top; ++i) {
      alternatives[t.top[i].text()] = t.top[i].logprob();
    }
    out["top_logprobs"].push_back(std::move(alternatives));
    out["text_offset"].push_back(*offset);
    *offset += t.text.size();
  }
  return out;
}

PlainJson Logprobs(const ResponseContext& c, const std::vector<views::FinalToken>& tokens,
                   size_t* offset) {
  const int top = c.request->logprobs;
  if (top < 0) return nullptr;
  return IsChat(c) ? ChatLogprobs(tokens, top) : CompletionLogprobs(tokens, top, offset);
}

PlainJson ArborChoice(const ResponseContext& c, const std::string& job_id,
                      const std::vector<views::FinalToken>& tokens) {
  PlainJson arbor = {{"job_id", job_id}};
  if (c.request->token_strategies) {
    PlainJson strategies = PlainJson::array();
    for (const views::FinalToken& t : tokens) strategies.push_back(LowerStrategyName(t.strategy));
    arbor["token_strategies"] = std::move(strategies);
  }
  return arbor;
}

PlainJson Header(const ResponseContext& c, bool chunk) {
  const char* object =
      IsChat(c) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", c.id},
          {"object", object},
          {"created", c.created},
          {"model", c.model},
          {"system_fingerprint", nullptr}};
}

// Prompt tokens count once per prompt, not once per choice (OpenAI's convention for n > 1).
PlainJson UsageJson(const ResponseContext& c, const std::vector<arbor::v1::Usage>& usages) {
  int64_t prompt = 0, cached = 0, completion = 0, explored = 0;
  for (size_t i = 0; i < usages.size(); ++i) {
    if (i % c.request->n == 0) {
      prompt += usages[i].prompt_tokens();
      cached += usages[i].cached_prompt_tokens();
    }
    completion += usages[i].generated_tokens();
    explored += usages[i].explored_tokens();
  }
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}},
          {"arbor", {{"explored_tokens", explored}}}};
}

PlainJson StrategyCountsJson(const arbor::v1::StrategyCounts& s) {
  return {{"argmax", s.argmax()},       {"adaptive", s.adaptive()},
          {"branch", s.branch()},       {"insert", s.insert()},
          {"backspace", s.backspace()}, {"hot_sample", s.hot_sample()},
          {"resample", s.resample()},   {"branch_sample", s.branch_sample()}};
}

// The field an error message starts with ("messages[1].role: ..."), for OpenAI's `param`.
PlainJson Param(const std::string& message) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos || colon == 0) return nullptr;
  for (char ch : message.substr(0, colon)) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '[' ||
          ch == ']')) {
      return nullptr;
    }
  }
  return message.substr(0, colon);
}

const char* ErrorType(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return "invalid_request_error";
    case absl::StatusCode::kUnauthenticated:
      return "authentication_error";
    case absl::StatusCode::kPermissionDenied:
      return "permission_error";
    case absl::StatusCode::kResourceExhausted:
      return "rate_limit_error";
    default:
      return "server_error";
  }
}

// A whole answer's reasoning_content: null when the job ran no search.
PlainJson Reasoning(const views::FinalPiece& output) {
  return output.reasoning.empty() ? PlainJson(nullptr) : PlainJson(output.reasoning);
}

// One call as a message's tool_calls entry (and a stream's first delta of it).
PlainJson CallJson(const ReturnedToolCall& call) {
  return {{"id", call.id},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

}  // namespace

std::string CompletionJson(const ResponseContext& context,
                           const std::vector<ChoiceResult>& choices) {
  PlainJson out = Header(context, /*chunk=*/false);
  PlainJson list = PlainJson::array();
  std::vector<arbor::v1::Usage> usages;
  std::vector<std::string> job_ids;
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& r = choices[i];
    size_t offset = 0;
    PlainJson choice = {{"index", i},
                        {"logprobs", Logprobs(context, r.output.tokens, &offset)},
                        {"finish_reason", FinishReason(r.finished.reason())}};
    if (IsChat(context)) {
      choice["message"] = {{"role", "assistant"}, {"content", r.output.text}, {"refusal", nullptr}};
      if (!r.tool_calls.empty()) {
        // OpenAI's shape: content null when the answer is only calls.
        if (r.output.text.empty()) choice["message"]["content"] = nullptr;
        PlainJson calls = PlainJson::array();
        for (const ReturnedToolCall& call : r.tool_calls) calls.push_back(CallJson(call));
        choice["message"]["tool_calls"] = std::move(calls);
        choice["finish_reason"] = "tool_calls";
      }
      if (context.request->reasoning) choice["message"]["reasoning_content"] = Reasoning(r.output);
    } else {
      choice["text"] = r.output.text;
      if (context.request->reasoning) choice["reasoning_content"] = Reasoning(r.output);
    }
    PlainJson arbor = ArborChoice(context, r.job_id, r.output.tokens);
    arbor["strategies"] = StrategyCountsJson(r.finished.strategies());
    choice["arbor"] = std::move(arbor);
    list.push_back(std::move(choice));
    usages.push_back(r.finished.usage());
    job_ids.push_back(r.job_id);
  }
  out["choices"] = std::move(list);
  out["usage"] = UsageJson(context, usages);
  out["arbor"] = {{"job_id", job_ids.empty() ? "" : job_ids.front()}, {"job_ids", job_ids}};
  return out.dump(-1, ' ', false, PlainJson::error_handler_t::replace);
}

std::string ChunkJson(const ResponseContext& context, int index, const std::string& job_id,
                      const views::FinalPiece& piece, const arbor::v1::FinishedEvent* finished,
                      bool first, size_t* text_offset, bool made_tool_calls) {
  PlainJson out = Header(context, /*chunk=*/true);
  PlainJson choice = {
      {"index", index},
      {"logprobs",
       piece.tokens.empty() ? PlainJson(nullptr) : Logprobs(context, piece.tokens, text_offset)},
      {"finish_reason", finished == nullptr ? PlainJson(nullptr)
                        : made_tool_calls   ? PlainJson("tool_calls")
                                            : PlainJson(FinishReason(finished->reason()))}};
  if (IsChat(context)) {
    PlainJson delta = PlainJson::object();
    if (first) delta["role"] = "assistant";
    if (!piece.text.empty() || first) delta["content"] = piece.text;
    if (!piece.reasoning.empty()) delta["reasoning_content"] = piece.reasoning;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = piece.text;
    if (!piece.reasoning.empty()) choice["reasoning_content"] = piece.reasoning;
  }
  choice["arbor"] = ArborChoice(context, job_id, piece.tokens);
  out["choices"] = PlainJson::array({std::move(choice)});
  if (context.request->include_usage) out["usage"] = nullptr;  // Only the last chunk has it.
  return out.dump(-1, ' ', false, PlainJson::error_handler_t::replace);
}

std::vector<std::string> ToolCallChunksJson(const ResponseContext& context, int index,
                                            const std::string& job_id,
                                            const ReturnedToolCall& call) {
  std::vector<std::string> chunks;
  PlainJson opening = CallJson(call);
  opening["function"]["arguments"] = "";
  opening["index"] = call.index;
  for (PlainJson delta :
       {std::move(opening),
        PlainJson{{"index", call.index}, {"function", {{"arguments", call.arguments}}}}}) {
    PlainJson out = Header(context, /*chunk=*/true);
    out["choices"] =
        PlainJson::array({{{"index", index},
                           {"logprobs", nullptr},
                           {"finish_reason", nullptr},
                           {"delta", {{"tool_calls", PlainJson::array({std::move(delta)})}}},
                           {"arbor", {{"job_id", job_id}}}}});
    if (context.request->include_usage) out["usage"] = nullptr;
    chunks.push_back(out.dump(-1, ' ', false, PlainJson::error_handler_t::replace));
  }
  return chunks;
}

std::string UsageChunkJson(const ResponseContext& context,
                           const std::vector<arbor::v1::Usage>& usages) {
  PlainJson out = Header(context, /*chunk=*/true);
  out["choices"] = PlainJson::array();
  out["usage"] = UsageJson(context, usages);
  return out.dump(-1, ' ', false, PlainJson::error_handler_t::replace);
}

std::string ErrorJson(const absl::Status& status) {
  const std::string message(status.message());
  PlainJson error = {{"message", message},
                     {"type", ErrorType(status.code())},
                     {"param", Param(message)},
                     {"code", absl::AsciiStrToLower(absl::StatusCodeToString(status.code()))}};
  return PlainJson{{"error", std::move(error)}}.dump(-1, ' ', false,
                                                     PlainJson::error_handler_t::replace);
}

int HttpStatus(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;  // The client went away (nginx's convention); nobody reads it.
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

}  // namespace arbor::coordinator::http
