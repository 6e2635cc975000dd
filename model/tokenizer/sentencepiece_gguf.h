// A SentencePiece vocabulary as GGUF files store it (tokenizer.ggml.model = "llama": Llama 2,
// Mistral, TinyLlama GGUFs): pieces, scores and types, but no merges. llama.cpp encodes such text
// by repeatedly joining the adjacent pair whose joined piece scores highest, with unknown
// characters spelled as <0xXX> byte tokens. This rebuilds the tokenizer.json Hugging Face's
// converter writes for the same vocabulary — a byte-fallback BPE whose merges are every split of
// every piece into two pieces, ranked by the joined piece's score, behind a normalizer that
// spells spaces "▁" (and puts one in front, as add_space_prefix says) — so that Arbor's one BPE
// implementation serves it.
#ifndef ARBOR_MODEL_TOKENIZER_SENTENCEPIECE_GGUF_H_
#define ARBOR_MODEL_TOKENIZER_SENTENCEPIECE_GGUF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/gguf.h"
#include "nlohmann/json.hpp"

namespace arbor::model {

// The "normalizer", "pre_tokenizer", "model" and "decoder" members of the tokenizer.json for the
// SentencePiece vocabulary of `file` (`tokens`, `types` as read from it). Errors name the key:
// scores missing or of another length than the tokens.
absl::StatusOr<nlohmann::json> SentencePieceTokenizerJson(const GgufFile& file,
                                                          const std::vector<std::string>& tokens,
                                                          const std::vector<int64_t>& types);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_SENTENCEPIECE_GGUF_H_
