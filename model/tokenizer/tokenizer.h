// A Hugging Face tokenizer.json BPE tokenizer: byte-level BPE as used by Llama 3 and SmolLM
// (Split/Digits/ByteLevel pre-tokenizers, merges as "a b" strings or ["a", "b"] pairs,
// ignore_merges), plus the SentencePiece-style BPE of Llama 2 (Prepend/Replace normalizer,
// byte_fallback, Metaspace-like decoder). Added and special tokens are matched in the text
// before BPE (leftmost, then longest). Anything else is refused at load with an
// "unsupported tokenizer" error naming the field.
//
// Decode is the exact inverse of Encode on bytes: Decode(Encode(s)) == s for any byte string,
// valid UTF-8 or not, for the byte-level tokenizers (see ToValidUtf8 for display text).
#ifndef ARBOR_MODEL_TOKENIZER_TOKENIZER_H_
#define ARBOR_MODEL_TOKENIZER_TOKENIZER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/tokenizer/normalizer.h"
#include "model/tokenizer/pre_tokenizer.h"

namespace arbor::model {

class Tokenizer {
 public:
  // Parses the text of a tokenizer.json. Errors name the offending field.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(absl::string_view json);
  // Reads and parses a tokenizer.json file; errors name the file.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromFile(const std::string& path);

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of `text` (any bytes). With `parse_special`, special tokens written in the text
  // (e.g. "<|eot_id|>") become their ids; without, they are encoded as plain text. Non-special
  // added tokens are always matched. Adds no BOS: see prefix_tokens(). Thread-safe.
  std::vector<int> Encode(absl::string_view text, bool parse_special = true) const;

  // The bytes the ids stand for, special tokens included; ids outside [0, vocab_size()) and
  // holes in the vocabulary contribute nothing.
  std::string Decode(const std::vector<int>& ids) const;

  // The id of a token given as written in the vocabulary (e.g. "Ġthe" or "<|eot_id|>").
  absl::StatusOr<int> TokenId(absl::string_view token) const;
  // The token as written in the vocabulary; empty for an unknown id.
  std::string TokenText(int id) const;
  // The bytes one token contributes to Decode (before any leading-space strip of the decoder).
  absl::string_view TokenBytes(int id) const;
  // True for added tokens marked "special" (BOS, EOS, chat headers…).
  bool IsSpecial(int id) const;
  // One more than the largest id, model vocabulary and added tokens together.
  int vocab_size() const { return static_cast<int>(token_text_.size()); }
  // Tokens the tokenizer's post-processor puts before a single sequence (Llama 3: BOS).
  const std::vector<int>& prefix_tokens() const { return prefix_tokens_; }
  // True when Decode drops one leading space of the text (Llama 2's Strip decoder), which an
  // incremental decoder must reproduce.
  bool strips_leading_space() const { return strip_leading_space_; }

 private:
  struct AddedToken {
    std::string content;
    int id = 0;
    bool special = false;
    bool lstrip = false;
    bool rstrip = false;
    bool single_word = false;
  };
  struct Merge {
    int rank;
    int id;
  };
  // A special or added token found in the text, with the span it consumes.
  struct AddedMatch {
    size_t begin;
    size_t end;
    int id;
  };

  Tokenizer() = default;
  absl::Status LoadModel(const nlohmann::json& model);
  // LoadModel's pieces: the vocabulary and unk token, the single-byte symbols, the merges.
  absl::Status LoadVocab(const nlohmann::json& model);
  absl::Status FindByteSymbols();
  absl::Status LoadMerges(const nlohmann::json& merges);
  absl::Status LoadAddedTokens(const nlohmann::json& added_tokens);
  absl::Status LoadDecoder(const nlohmann::json& decoder);
  absl::Status LoadPostProcessor(const nlohmann::json& post_processor);
  absl::Status SetToken(int id, const std::string& text, const std::string& where);

  // The first added token at or after `from` in `text`, longest on ties; false when none.
  bool FindAddedToken(absl::string_view text, size_t from, bool parse_special,
                      AddedMatch* match) const;
  void EncodeSegment(absl::string_view segment, std::vector<int>* ids) const;
  void EncodeWord(absl::string_view word, std::vector<int>* ids) const;
  void MergeWord(absl::string_view word, std::vector<int>* ids) const;
  void InitialSymbols(absl::string_view word, std::vector<int>* symbols) const;

  // Model vocabulary: token text → id (added tokens are in added_ only).
  absl::flat_hash_map<std::string, int> vocab_;
  absl::flat_hash_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) → merge.
  std::vector<std::string> token_text_;          // By id; empty for holes.
  std::vector<std::string> token_bytes_;         // By id: what Decode emits.
  std::vector<bool> special_;                    // By id.
  std::vector<AddedToken> added_;
  // For each first byte, the added tokens starting with it, longest first (indices in added_).
  std::array<std::vector<int>, 256> added_by_first_byte_;
  std::array<int, 256> byte_symbol_{};  // Byte-level: byte → id of its one-character token.
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  std::vector<int> prefix_tokens_;
  bool ignore_merges_ = false;
  bool byte_fallback_ = false;
  int unk_id_ = -1;
  bool fuse_unk_ = false;
  bool strip_leading_space_ = false;

  // BPE results per word (raw bytes → ids). Words repeat heavily in text, so after warm-up most
  // words cost one hash lookup. Bounded in bytes (tokenizer.cc): a stream of fresh words must
  // not grow a long-lived coordinator.
  mutable std::mutex cache_mutex_;
  mutable absl::flat_hash_map<std::string, std::vector<int>> cache_;
  mutable size_t cache_bytes_ = 0;  // Approximate memory held by cache_.
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_TOKENIZER_H_
