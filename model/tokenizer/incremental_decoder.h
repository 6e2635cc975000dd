// Streaming detokenizer: turns token ids into text as they are generated, one id at a time,
// without ever emitting broken UTF-8. A token can end in the middle of a character (byte-level
// BPE splits emoji and CJK across tokens); those bytes are held back until the character is
// complete. Bytes that can never form a character become U+FFFD, so the concatenation of all
// outputs (Push… then Flush) equals ToValidUtf8(tokenizer.Decode(ids)) — and equals Decode itself
// whenever the decoded bytes are valid UTF-8.
#ifndef ARBOR_MODEL_TOKENIZER_INCREMENTAL_DECODER_H_
#define ARBOR_MODEL_TOKENIZER_INCREMENTAL_DECODER_H_

#include <string>

#include "model/tokenizer/tokenizer.h"

namespace arbor::model {

class IncrementalDecoder {
 public:
  // `tokenizer` must outlive the decoder. With `skip_special_tokens`, special tokens (BOS,
  // <|eot_id|>…) produce no text, as for a chat reply shown to a user.
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

  // Adds one token; returns the text that became complete (possibly empty).
  std::string Push(int id);
  // Ends the stream: returns what was held back, with U+FFFD for an unfinished character.
  std::string Flush();
  // Starts a new stream (e.g. after a backspace re-draw, re-push the kept ids).
  void Reset();

 private:
  // Moves every complete or definitely-invalid character of pending_ to the result.
  std::string TakeComplete();

  const Tokenizer& tokenizer_;
  bool skip_special_;
  bool at_start_ = true;  // For decoders that drop one leading space of the whole text.
  std::string pending_;   // Bytes of an unfinished character (at most 3).
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_INCREMENTAL_DECODER_H_
