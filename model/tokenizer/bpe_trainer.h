// A small byte-level BPE trainer: learns merges from a text corpus and writes a complete
// Hugging Face tokenizer.json in Llama 3's format (Split regex + ByteLevel pre-tokenizer,
// ByteLevel decoder, ignore_merges), so `arbor make-model` can build a real tokenizer without
// downloading one. The corpus it is normally given, BuiltinCorpus(), is compiled in.
#ifndef ARBOR_MODEL_TOKENIZER_BPE_TRAINER_H_
#define ARBOR_MODEL_TOKENIZER_BPE_TRAINER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arbor::model {

struct BpeTrainerOptions {
  // Total vocabulary: 256 byte symbols + learned merges + special tokens. Fewer merges are
  // learned when the corpus runs out of pairs; Tokenizer::vocab_size() tells the final size.
  int vocab_size = 0;
  // Added as special tokens with ids right after the BPE vocabulary, in this order. When
  // "<|begin_of_text|>" is among them, the post-processor prepends it like Llama 3's does.
  std::vector<std::string> special_tokens;
};

// Trains on `corpus` and returns the tokenizer.json text. Deterministic: the same corpus and
// options give the same bytes. Ties between equally frequent pairs go to the smaller id pair.
absl::StatusOr<std::string> TrainByteLevelBpe(absl::string_view corpus,
                                              const BpeTrainerOptions& options);

// Llama 3's special tokens that chat templates and stop conditions need, in Llama 3's order.
std::vector<std::string> Llama3SpecialTokens();

// A varied English-centred corpus (prose, dialogue, code, numbers, punctuation, some other
// scripts and emoji) of a few tens of KB, with " ..." frequent enough to become one token.
absl::string_view BuiltinCorpus();

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_BPE_TRAINER_H_
