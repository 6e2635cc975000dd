// Prompt ids built the way a reference renders a chat template: the template's text is
// concatenated and then tokenized between its special tokens, so runs of text written piece by
// piece here are encoded whole (encoding them piecewise could merge differently at the seams).
#ifndef ARBOR_MODEL_TOKENIZER_PROMPT_BUILDER_H_
#define ARBOR_MODEL_TOKENIZER_PROMPT_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "model/tokenizer/tokenizer.h"

namespace arbor::model {

class PromptBuilder {
 public:
  explicit PromptBuilder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // Plain text: never parsed for special tokens (message contents cannot smuggle them in).
  void Text(absl::string_view text);
  // A special token of the template; fails naming it when the tokenizer lacks it.
  absl::Status Special(absl::string_view token);
  // A markup literal that is a control token in some vocabularies and text in others (Mistral's
  // [INST]): the token where the tokenizer has it as a special one, text otherwise.
  void Markup(absl::string_view literal);
  std::vector<int> Finish();

 private:
  void Flush();

  const Tokenizer& tokenizer_;
  std::string text_;
  std::vector<int> ids_;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_PROMPT_BUILDER_H_
