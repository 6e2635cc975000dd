#include "coordinator/http/tokenize_body.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/http/json_body.h"
#include "nlohmann/json.hpp"

namespace arbor::coordinator::http {
namespace {

using json = nlohmann::ordered_json;

absl::Status Invalid(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

absl::StatusOr<std::string> StringField(const json& value, absl::string_view field) {
  if (!value.is_string()) return Invalid(field, "must be a string");
  return value.get<std::string>();
}

// `messages`: OpenAI chat messages whose content is a string.
absl::Status ParseMessages(const json& value, arbor::v1::ChatPrompt& chat) {
  if (!value.is_array()) return Invalid("messages", "must be an array of {role, content}");
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string at = absl::StrCat("messages[", i, "]");
    if (!value[i].is_object()) return Invalid(at, "must be an object with role and content");
    arbor::v1::ChatMessage* message = chat.add_messages();
    for (const auto& [key, field] : value[i].items()) {
      const std::string name = absl::StrCat(at, ".", key);
      absl::StatusOr<std::string> text = StringField(field, name);
      if (!text.ok()) return text.status();
      if (key == "role") {
        message->set_role(*text);
      } else if (key == "content") {
        message->set_content(*text);
      } else {
        return Invalid(name, "unrecognized field (a message has role and content)");
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<json> ParseObject(absl::string_view body) {
  absl::StatusOr<json> parsed = ParseJsonBody(body);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->is_object()) return Invalid("body", "must be a JSON object");
  return parsed;
}

}  // namespace

absl::StatusOr<TokenizeBody> ParseTokenizeBody(absl::string_view body) {
  absl::StatusOr<json> parsed = ParseObject(body);
  if (!parsed.ok()) return parsed.status();
  TokenizeBody out;
  std::optional<bool> add_generation_prompt;
  for (const auto& [key, value] : parsed->items()) {
    if (key == "model") {
      absl::StatusOr<std::string> model = StringField(value, key);
      if (!model.ok()) return model.status();
      out.model = *model;
    } else if (key == "prompt") {
      absl::StatusOr<std::string> text = StringField(value, key);
      if (!text.ok()) return text.status();
      out.prompt.set_text(*text);
    } else if (key == "messages") {
      if (absl::Status s = ParseMessages(value, *out.prompt.mutable_chat()); !s.ok()) return s;
    } else if (key == "add_generation_prompt") {
      if (!value.is_boolean()) return Invalid(key, "must be true or false");
      add_generation_prompt = value.get<bool>();
    } else {
      return Invalid("body", absl::StrCat("unrecognized field '", key,
                                          "' (tokenize takes model, and prompt or messages "
                                          "with add_generation_prompt)"));
    }
  }
  const bool text = parsed->contains("prompt"), chat = parsed->contains("messages");
  if (text == chat) return Invalid("body", "give either prompt (text) or messages (chat)");
  if (add_generation_prompt.has_value() && !chat) {
    return Invalid("add_generation_prompt", "only with messages");
  }
  if (chat) {
    out.prompt.mutable_chat()->set_add_generation_prompt(add_generation_prompt.value_or(true));
  }
  return out;
}

absl::StatusOr<DetokenizeBody> ParseDetokenizeBody(absl::string_view body) {
  absl::StatusOr<json> parsed = ParseObject(body);
  if (!parsed.ok()) return parsed.status();
  DetokenizeBody out;
  for (const auto& [key, value] : parsed->items()) {
    if (key == "model") {
      absl::StatusOr<std::string> model = StringField(value, key);
      if (!model.ok()) return model.status();
      out.model = *model;
    } else if (key == "tokens") {
      if (!value.is_array()) return Invalid(key, "must be an array of token ids");
      for (size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_number_integer() || value[i].get<int64_t>() < 0 ||
            value[i].get<int64_t>() > std::numeric_limits<int32_t>::max()) {
          return Invalid(absl::StrCat("tokens[", i, "]"), "must be a token id (an integer >= 0)");
        }
        out.tokens.add_token_ids(static_cast<int32_t>(value[i].get<int64_t>()));
      }
    } else {
      return Invalid("body", absl::StrCat("unrecognized field '", key,
                                          "' (detokenize takes model and tokens)"));
    }
  }
  if (!parsed->contains("tokens")) return Invalid("tokens", "required: the token ids to decode");
  return out;
}

std::string TokenizeAnswer(const arbor::v1::TokenizeResponse& tokens) {
  const json answer = {{"tokens", std::vector<int32_t>(tokens.token_ids().begin(),
                                                       tokens.token_ids().end())},
                       {"count", tokens.token_ids_size()},
                       {"max_model_len", tokens.max_context()}};
  return answer.dump();
}

std::string DetokenizeAnswer(const arbor::v1::DetokenizeResponse& text) {
  return json({{"prompt", text.text()}}).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace arbor::coordinator::http
