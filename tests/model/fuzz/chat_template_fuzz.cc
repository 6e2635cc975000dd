// libFuzzer target: a tokenizer_config.json and a conversation from fuzzer bytes. The input up
// to its first NUL byte is the tokenizer_config.json text; the rest, split at NUL bytes, is
// role, content, role, content, … Template detection must answer a status; a detected template
// renders the conversation with a Llama 3, a ChatML and a Mistral tokenizer (each lacks the
// others' special tokens: FAILED_PRECONDITION naming the token; Mistral may refuse the turn order
// with INVALID_ARGUMENT) and the ids must decode to exactly the template's text — written here
// independently — with special tokens only where the template puts them: message roles and
// contents can never become control tokens. "tool" turns take the template's tool format where
// it has one (ChatML: <tool_response> blocks of one user turn; Llama 3.1+: "ipython" turns
// holding the content as a JSON string).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"

namespace {

using arbor::model::ChatFormat;
using arbor::model::ChatMessage;
using arbor::model::ChatTemplate;
using arbor::model::Tokenizer;

const Tokenizer& TrainedTokenizer(std::vector<std::string> specials) {
  auto json =
      arbor::model::TrainByteLevelBpe(arbor::model::BuiltinCorpus(), {600, std::move(specials)});
  if (!json.ok()) std::abort();
  auto loaded = Tokenizer::FromJson(*json);
  if (!loaded.ok()) std::abort();
  return *loaded->release();
}

const Tokenizer& Llama3Tokenizer() {
  static const Tokenizer& tokenizer = TrainedTokenizer(arbor::model::Llama3SpecialTokens());
  return tokenizer;
}

const Tokenizer& ChatMLTokenizer() {
  static const Tokenizer& tokenizer =
      TrainedTokenizer({"<|endoftext|>", "<|im_start|>", "<|im_end|>"});
  return tokenizer;
}

const Tokenizer& MistralTokenizer() {
  static const Tokenizer& tokenizer = TrainedTokenizer({"<s>", "</s>", "[INST]", "[/INST]"});
  return tokenizer;
}

// The rendered text the template's Jinja would produce (special tokens written as their text),
// and how many special tokens it holds; nullopt where the template refuses the conversation.
struct Rendering {
  std::string text;
  int specials = 0;
};

void Llama3Turn(absl::string_view role, absl::string_view content, Rendering* out) {
  absl::StrAppend(&out->text, "<|start_header_id|>", role, "<|end_header_id|>\n\n",
                  absl::StripAsciiWhitespace(content), "<|eot_id|>");
  out->specials += 3;
}

// Llama 3.1's "tool" turn: an "ipython" turn whose content is written as a JSON string.
void Llama3ToolTurn(absl::string_view content, Rendering* out) {
  absl::StrAppend(&out->text, "<|start_header_id|>ipython<|end_header_id|>\n\n",
                  nlohmann::json(std::string(content))
                      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "<|eot_id|>");
  out->specials += 3;
}

Rendering ExpectedLlama3(const ChatTemplate& chat_template,
                         const std::vector<ChatMessage>& messages, bool generation_prompt,
                         absl::string_view today) {
  Rendering out{"<|begin_of_text|>", 1};
  size_t first = 0;
  if (chat_template.knowledge_date_preamble) {
    const bool own_system = !messages.empty() && messages[0].role == "system";
    const absl::string_view date =
        chat_template.preamble_date.empty() ? today : chat_template.preamble_date;
    const std::string body =
        absl::StrCat("Cutting Knowledge Date: December 2023\nToday Date: ", date, "\n\n",
                     own_system ? absl::StripAsciiWhitespace(messages[0].content) : "");
    absl::StrAppend(&out.text, "<|start_header_id|>system<|end_header_id|>\n\n", body,
                    "<|eot_id|>");
    out.specials += 3;
    first = own_system ? 1 : 0;
  }
  for (size_t i = first; i < messages.size(); ++i) {
    if (chat_template.json_tool_calls && messages[i].role == "tool") {
      Llama3ToolTurn(messages[i].content, &out);
    } else {
      Llama3Turn(messages[i].role, messages[i].content, &out);
    }
  }
  if (generation_prompt) {
    absl::StrAppend(&out.text, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    out.specials += 2;
  }
  return out;
}

Rendering ExpectedChatML(const std::vector<ChatMessage>& messages, bool generation_prompt) {
  Rendering out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role != "tool") {
      absl::StrAppend(&out.text, "<|im_start|>", m.role, "\n", m.content, "<|im_end|>\n");
      out.specials += 2;
      continue;
    }
    // Consecutive results share one user turn.
    if (i == 0 || messages[i - 1].role != "tool") {
      absl::StrAppend(&out.text, "<|im_start|>user");
      out.specials += 1;
    }
    absl::StrAppend(&out.text, "\n<tool_response>\n", m.content, "\n</tool_response>");
    if (i + 1 == messages.size() || messages[i + 1].role != "tool") {
      absl::StrAppend(&out.text, "<|im_end|>\n");
      out.specials += 1;
    }
  }
  if (generation_prompt) {
    absl::StrAppend(&out.text, "<|im_start|>assistant\n");
    out.specials += 1;
  }
  return out;
}

std::optional<Rendering> ExpectedMistral(const ChatTemplate& chat_template,
                                         std::vector<ChatMessage> messages) {
  std::optional<std::string> system;
  if (!messages.empty() && messages[0].role == "system") {
    if (chat_template.legacy_mistral) return std::nullopt;
    system = messages[0].content;
    messages.erase(messages.begin());
  }
  Rendering out{"<s>", 1};
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool user_turn = i % 2 == 0;
    if (m.role != (user_turn ? "user" : "assistant")) return std::nullopt;
    if (user_turn) {
      const std::string prefix =
          system && i + 1 == messages.size() ? absl::StrCat(*system, "\n\n") : "";
      absl::StrAppend(&out.text, "[INST] ", prefix, m.content,
                      chat_template.legacy_mistral ? " [/INST]" : "[/INST]");
      out.specials += 2;
    } else {
      absl::StrAppend(&out.text, chat_template.legacy_mistral ? "" : " ",
                      chat_template.mistral_trims_answers ? absl::StripAsciiWhitespace(m.content)
                                                          : absl::string_view(m.content),
                      "</s>");
      out.specials += 1;
    }
  }
  return out;
}

std::optional<Rendering> Expected(const ChatTemplate& chat_template,
                                  std::vector<ChatMessage> messages, bool generation_prompt,
                                  absl::string_view today) {
  if (!chat_template.default_system.empty() &&
      (messages.empty() || messages.front().role != "system")) {
    messages.insert(messages.begin(), {"system", chat_template.default_system});
  }
  switch (chat_template.format) {
    case ChatFormat::kLlama3:
      return ExpectedLlama3(chat_template, messages, generation_prompt, today);
    case ChatFormat::kChatML:
      return ExpectedChatML(messages, generation_prompt);
    case ChatFormat::kMistral:
      return ExpectedMistral(chat_template, std::move(messages));
  }
  std::abort();
}

std::string Today() { return absl::FormatTime("%d %b %Y", absl::Now(), absl::LocalTimeZone()); }

int SpecialCount(const Tokenizer& tokenizer, const std::vector<int>& ids) {
  int count = 0;
  for (int id : ids) count += tokenizer.IsSpecial(id) ? 1 : 0;
  return count;
}

void Render(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
            const std::vector<ChatMessage>& messages, bool generation_prompt) {
  const std::string before = Today();
  absl::StatusOr<std::vector<int>> ids =
      arbor::model::ApplyChatTemplate(tokenizer, chat_template, messages, generation_prompt);
  std::optional<Rendering> expected = Expected(chat_template, messages, generation_prompt, before);
  if (!ids.ok()) {
    const absl::StatusCode code = ids.status().code();
    const absl::string_view message = ids.status().message();
    // A missing special token fails a rendering, naming it; Mistral refuses what its template
    // raises an exception on, and nothing else.
    const bool missing_token = code == absl::StatusCode::kFailedPrecondition &&
                               absl::StrContains(message, "special token");
    const bool refused = code == absl::StatusCode::kInvalidArgument && !expected.has_value() &&
                         absl::StrContains(message, "Mistral");
    if (!missing_token && !refused) std::abort();
    return;
  }
  if (!expected.has_value()) std::abort();  // Rendered what the template refuses.
  for (int id : *ids) {
    if (id < 0 || id >= tokenizer.vocab_size()) std::abort();
  }
  const std::string decoded = tokenizer.Decode(*ids);
  if (decoded != expected->text) {
    // The day may have turned during the rendering.
    expected = Expected(chat_template, messages, generation_prompt, Today());
    if (decoded != expected->text) std::abort();
  }
  // A role or content that became a control token shows as one special token too many.
  if (SpecialCount(tokenizer, *ids) != expected->specials) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const absl::string_view config = input.substr(0, nul);
  absl::StatusOr<ChatTemplate> chat_template = arbor::model::DetectChatTemplate(config);
  if (!chat_template.ok()) {
    const absl::StatusCode code = chat_template.status().code();
    if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kNotFound) {
      std::abort();
    }
    if (chat_template.status().message().empty()) std::abort();
    return 0;
  }
  std::vector<ChatMessage> messages;
  if (nul != absl::string_view::npos) {
    const std::vector<std::string> parts = absl::StrSplit(input.substr(nul + 1), '\0');
    for (size_t i = 0; i + 1 < parts.size(); i += 2) messages.push_back({parts[i], parts[i + 1]});
  }
  const bool generation_prompt = size % 2 == 0;
  Render(Llama3Tokenizer(), *chat_template, messages, generation_prompt);
  Render(ChatMLTokenizer(), *chat_template, messages, generation_prompt);
  Render(MistralTokenizer(), *chat_template, messages, generation_prompt);
  return 0;
}
