// The normalizer of a Hugging Face tokenizer.json, limited to the steps SentencePiece-style BPE
// tokenizers (Llama 2) use: Prepend, Replace of a literal string, and Sequence of those.
// Byte-level tokenizers (Llama 3) have none. Other normalizers (NFC, Lowercase…) are refused with
// an "unsupported tokenizer" error rather than silently encoding differently.
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
    bool prepend;  // Prepend `content` (to non-empty text), else replace `pattern`.
    std::string pattern;
    std::string content;
  };
  absl::Status AddStep(const nlohmann::json& json, const std::string& where);

  std::vector<Step> steps_;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_NORMALIZER_H_
