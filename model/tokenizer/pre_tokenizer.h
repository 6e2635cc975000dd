// The pre-tokenizer of a Hugging Face tokenizer.json: cuts text into the words that BPE then
// encodes one by one. Supports the stages byte-level BPE tokenizers use — Split (a regex or a
// literal, via PCRE2), Digits, and ByteLevel (optional prefix space and GPT-2 regex) — in any
// Sequence. Pieces are produced as raw bytes; the byte-level alphabet is applied by the BPE step.
#ifndef ARBOR_MODEL_TOKENIZER_PRE_TOKENIZER_H_
#define ARBOR_MODEL_TOKENIZER_PRE_TOKENIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace arbor::model {

// The Split pattern of Llama 3's tokenizer.json (also what the BPE trainer writes).
inline constexpr absl::string_view kLlama3SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2's (Qwen2.5's tokenizer.json): Llama 3's with every digit apart.
inline constexpr absl::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// What a Split stage does with the text its pattern matches.
enum class SplitBehavior {
  kIsolated,  // Matches and the gaps between them all become pieces.
  kRemoved,   // Matches are dropped; the gaps become pieces.
};

// One PCRE2 pattern (UTF + Unicode properties, JIT-compiled) cutting text into pieces. Invalid
// UTF-8 never matches, so stray bytes end up in gap pieces and still reach the encoder.
class RegexSplit {
 public:
  static absl::StatusOr<std::unique_ptr<RegexSplit>> Create(absl::string_view pattern, bool literal,
                                                            SplitBehavior behavior, bool invert);
  ~RegexSplit();
  RegexSplit(const RegexSplit&) = delete;
  RegexSplit& operator=(const RegexSplit&) = delete;

  // Calls `piece` on each non-empty piece of `text` in order; pieces are substrings of `text`.
  // Safe to call from several threads at once.
  void Split(absl::string_view text, absl::FunctionRef<void(absl::string_view)> piece) const;

 private:
  RegexSplit(void* code, SplitBehavior behavior, bool invert)
      : code_(code), behavior_(behavior), invert_(invert) {}

  void* code_;  // pcre2_code_8*, kept opaque so users of this header need no PCRE2 include.
  SplitBehavior behavior_;
  bool invert_;
};

class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" value of tokenizer.json (null: the whole text is one word).
  // Unsupported types or options give an "unsupported tokenizer" error naming them.
  static absl::StatusOr<PreTokenizer> FromJson(const nlohmann::json& json);
  // Llama 3's: Split(kLlama3SplitPattern, Isolated) then ByteLevel without prefix space.
  static PreTokenizer Llama3();

  // Calls `word` on each word of `text`, in order.
  void Split(absl::string_view text, absl::FunctionRef<void(absl::string_view)> word) const;

  // True when a ByteLevel stage is present: words must be encoded in the byte-level alphabet.
  bool byte_level() const { return byte_level_; }

 private:
  struct Stage {
    std::shared_ptr<const RegexSplit> split;  // Null for a prefix-space stage.
  };
  absl::Status AddJsonStage(const nlohmann::json& json, const std::string& where);
  void SplitFrom(size_t stage, absl::string_view text,
                 absl::FunctionRef<void(absl::string_view)> word) const;

  std::vector<Stage> stages_;
  bool byte_level_ = false;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_PRE_TOKENIZER_H_
