// The normalizer of a Hugging Face tokenizer.json, limited to the steps the tokenizers Arbor
// serves use: Prepend and Replace of a literal string (SentencePiece-style BPE, Llama 2), the
// Unicode normal forms NFC, NFD, NFKC and NFKD (Qwen2's tokenizer.json composes with NFC; ICU
// computes them), and Sequence of those. Byte-level Llama 3 tokenizers have none. Other
// normalizers (Lowercase, BertNormalizer…) are refused with an "unsupported tokenizer" error
// rather than silently encoding differently.
#ifndef ARBOR_MODEL_TOKENIZER_NORMALIZER_H_
#define ARBOR_MODEL_TOKENIZER_NORMALIZER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace arbor::model {

class Normalizer {
 public:
  // Parses the "normalizer" value of tokenizer.json (null: no normalization).
  static absl::StatusOr<Normalizer> FromJson(const nlohmann::json& json);

  bool empty() const { return steps_.empty(); }
  // The normalized form of `text`.
  std::string Apply(absl::string_view text) const;

 private:
  struct Step {
    enum class Kind { kPrepend, kReplace, kUnicodeForm };
    Kind kind;
    std::string pattern;  // kReplace: what is replaced by `content`; kUnicodeForm: "NFC", …
    std::string content;  // kPrepend: what goes in front of non-empty text.
  };
  absl::Status AddStep(const nlohmann::json& json, const std::string& where);

  std::vector<Step> steps_;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_NORMALIZER_H_
