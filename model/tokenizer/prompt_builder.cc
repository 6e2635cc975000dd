#include "model/tokenizer/prompt_builder.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace arbor::model {

void PromptBuilder::Text(absl::string_view text) { absl::StrAppend(&text_, text); }

absl::Status PromptBuilder::Special(absl::string_view token) {
  auto id = tokenizer_.TokenId(token);
  if (!id.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("the chat template needs the special token ",
                                                      token, ", which this tokenizer lacks"));
  }
  Flush();
  ids_.push_back(*id);
  return absl::OkStatus();
}

void PromptBuilder::Markup(absl::string_view literal) {
  absl::StatusOr<int> id = tokenizer_.TokenId(literal);
  if (id.ok() && tokenizer_.IsSpecial(*id)) {
    Flush();
    ids_.push_back(*id);
  } else {
    Text(literal);
  }
}

std::vector<int> PromptBuilder::Finish() {
  Flush();
  return std::move(ids_);
}

void PromptBuilder::Flush() {
  if (text_.empty()) return;
  const std::vector<int> encoded = tokenizer_.Encode(text_, /*parse_special=*/false);
  ids_.insert(ids_.end(), encoded.begin(), encoded.end());
  text_.clear();
}

}  // namespace arbor::model
