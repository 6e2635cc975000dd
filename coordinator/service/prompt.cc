#include "coordinator/service/prompt.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/tokenizer/utf8.h"

namespace arbor::coordinator {
namespace {

constexpr char kNoTokenizer[] =
    "prompt: text and chat prompts need the model's tokenizer; start arbor-coordinator with "
    "--model (a model name, a GGUF file or a directory with tokenizer.json) or send the prompt as "
    "tokens";

std::vector<int32_t> ToInt32(const std::vector<int>& ids) {
  return std::vector<int32_t>(ids.begin(), ids.end());
}

}  // namespace

PromptCodec::PromptCodec(std::unique_ptr<model::Tokenizer> tokenizer,
                         std::optional<model::ChatTemplate> chat_template)
    : tokenizer_(std::move(tokenizer)), chat_template_(chat_template) {
  if (!chat_template_) chat_template_error_ = "the model has no recognised chat template";
}

absl::StatusOr<std::unique_ptr<PromptCodec>> PromptCodec::Load(
    const std::string& model_path, const std::string& chat_template_name) {
  ASSIGN_OR_RETURN(model::ModelTokenizer loaded,
                   model::LoadModelTokenizer(model_path, chat_template_name));
  auto codec = std::make_unique<PromptCodec>(std::move(loaded.tokenizer), std::nullopt);
  if (loaded.chat_template.ok()) {
    codec->chat_template_ = *loaded.chat_template;
  } else {
    codec->chat_template_error_ = std::string(loaded.chat_template.status().message());
  }
  return codec;
}

std::string PromptCodec::chat_template_description() const {
  if (chat_template_) return model::DescribeChatTemplate(*chat_template_);
  return model::DescribeChatTemplate(absl::FailedPreconditionError(chat_template_error_));
}

absl::StatusOr<std::vector<int32_t>> PromptCodec::Encode(const CheckedRequest& request) const {
  if (request.prompt_kind == PromptKind::kTokens) return request.prompt_token_ids;
  if (tokenizer_ == nullptr) return absl::FailedPreconditionError(kNoTokenizer);
  if (request.prompt_kind == PromptKind::kText) {
    std::vector<int32_t> ids = ToInt32(tokenizer_->prefix_tokens());
    const std::vector<int> text = tokenizer_->Encode(request.text);
    ids.insert(ids.end(), text.begin(), text.end());
    return ids;
  }
  if (!chat_template_) {
    return absl::FailedPreconditionError(
        absl::StrCat("chat: chat prompts are unavailable: ", chat_template_error_,
                     "; send the prompt as text or tokens"));
  }
  std::vector<model::ChatMessage> messages;
  messages.reserve(request.messages.size());
  for (const CheckedChatMessage& message : request.messages) {
    model::ChatMessage& added = messages.emplace_back();
    added.role = message.role;
    added.content = message.content;
    for (const arbor::v1::ToolCall& call : message.tool_calls) {
      added.tool_calls.push_back({call.name(), call.arguments()});
    }
  }
  const model::ChatTools tools = {request.tools, request.open_tool_call};
  absl::StatusOr<std::vector<int>> ids = model::ApplyChatTemplate(
      *tokenizer_, *chat_template_, messages, request.add_generation_prompt, tools);
  if (!ids.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("chat: ", ids.status().message()));
  }
  return ToInt32(*ids);
}

std::string PromptCodec::Decode(absl::Span<const int32_t> ids) const {
  if (tokenizer_ == nullptr) return "";
  std::string bytes = tokenizer_->Decode(std::vector<int>(ids.begin(), ids.end()));
  // Find where the last character starts; hold it back while it is only incomplete.
  size_t start = 0;
  while (start < bytes.size()) {
    const model::Utf8Prefix prefix = model::ReadUtf8Prefix(absl::string_view(bytes).substr(start));
    if (prefix.kind == model::Utf8Prefix::Kind::kIncomplete) {
      bytes.resize(start);
      break;
    }
    start += prefix.length;
  }
  return model::ToValidUtf8(bytes);
}

absl::StatusOr<std::vector<int32_t>> PromptCodec::EncodeContinuation(
    const std::string& text, const std::string& field) const {
  if (tokenizer_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        field,
        ": text needs the model's tokenizer; start arbor-coordinator with --model or send "
        "the continuation as tokens"));
  }
  return ToInt32(tokenizer_->Encode(text));
}

std::string PromptCodec::TokenText(int32_t id) const {
  if (tokenizer_ == nullptr) return "";
  return tokenizer_->Decode({id});
}

std::optional<std::vector<int32_t>> PromptCodec::ThinkingTokens() const {
  if (tokenizer_ == nullptr) return std::nullopt;
  std::vector<int32_t> ids = ToInt32(tokenizer_->Encode(" ...", /*parse_special=*/false));
  if (ids.empty()) return std::nullopt;
  return ids;
}

}  // namespace arbor::coordinator
