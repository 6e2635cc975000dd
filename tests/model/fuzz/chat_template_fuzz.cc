// libFuzzer target: a tokenizer_config.json and a conversation from fuzzer bytes. The input up
// to its first NUL byte is the tokenizer_config.json text; the rest, split at NUL bytes, is
// role, content, role, content, … Template detection must answer a status; a detected template
// renders the conversation with a Llama 3 tokenizer and a ChatML one (each lacks the other's
// special tokens: FAILED_PRECONDITION naming the token) and the ids must decode to exactly the
// template's text — written here independently — with special tokens only where the template
// puts them: message roles and contents can never become control tokens.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"

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

// The text the template's Jinja would produce (special tokens written as their text).
std::string Expected(const ChatTemplate& chat_template, std::vector<ChatMessage> messages,
                     bool generation_prompt) {
  if (!chat_template.default_system.empty() &&
      (messages.empty() || messages.front().role != "system")) {
    messages.insert(messages.begin(), {"system", chat_template.default_system});
  }
  std::string text;
  if (chat_template.format == ChatFormat::kLlama3) {
    text = "<|begin_of_text|>";
    for (const ChatMessage& m : messages) {
      absl::StrAppend(&text, "<|start_header_id|>", m.role, "<|end_header_id|>\n\n",
                      absl::StripAsciiWhitespace(m.content), "<|eot_id|>");
    }
    if (generation_prompt)
      absl::StrAppend(&text, "<|start_header_id|>assistant<|end_header_id|>\n\n");
  } else {
    for (const ChatMessage& m : messages) {
      absl::StrAppend(&text, "<|im_start|>", m.role, "\n", m.content, "<|im_end|>\n");
    }
    if (generation_prompt) absl::StrAppend(&text, "<|im_start|>assistant\n");
  }
  return text;
}

// Ids of special tokens in `ids`: how many the rendering used.
int SpecialCount(const Tokenizer& tokenizer, const std::vector<int>& ids) {
  int count = 0;
  for (int id : ids) count += tokenizer.IsSpecial(id) ? 1 : 0;
  return count;
}

int ExpectedSpecialCount(const ChatTemplate& chat_template, size_t messages,
                         bool generation_prompt) {
  const int per_message = chat_template.format == ChatFormat::kLlama3 ? 3 : 2;
  const int opening = chat_template.format == ChatFormat::kLlama3 ? 1 : 0;
  const int prompt = chat_template.format == ChatFormat::kLlama3 ? 2 : 1;
  return opening + per_message * static_cast<int>(messages) + (generation_prompt ? prompt : 0);
}

void Render(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
            const std::vector<ChatMessage>& messages, bool generation_prompt) {
  absl::StatusOr<std::vector<int>> ids =
      arbor::model::ApplyChatTemplate(tokenizer, chat_template, messages, generation_prompt);
  if (!ids.ok()) {
    // Only a missing special token may fail a rendering, and the message names it.
    if (ids.status().code() != absl::StatusCode::kFailedPrecondition ||
        ids.status().message().find("<|") == absl::string_view::npos) {
      std::abort();
    }
    return;
  }
  for (int id : *ids) {
    if (id < 0 || id >= tokenizer.vocab_size()) std::abort();
  }
  if (tokenizer.Decode(*ids) != Expected(chat_template, messages, generation_prompt)) std::abort();
  const bool system_added = !chat_template.default_system.empty() &&
                            (messages.empty() || messages.front().role != "system");
  if (SpecialCount(tokenizer, *ids) !=
      ExpectedSpecialCount(chat_template, messages.size() + (system_added ? 1 : 0),
                           generation_prompt)) {
    std::abort();  // A role or content became a control token.
  }
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
  return 0;
}
