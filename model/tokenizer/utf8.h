// UTF-8 helpers shared by the tokenizer: the Unicode well-formedness rules (Table 3-7) used to
// turn arbitrary decoded bytes into valid text, and to tell a sequence that is merely incomplete
// (more bytes may still arrive while streaming) from one that is already broken.
#ifndef ARBOR_MODEL_TOKENIZER_UTF8_H_
#define ARBOR_MODEL_TOKENIZER_UTF8_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace arbor::model {

// How the bytes at the start of a buffer read as UTF-8.
struct Utf8Prefix {
  enum class Kind {
    kComplete,    // `length` bytes form one well-formed character.
    kIncomplete,  // All `length` bytes (the whole buffer) are a valid start of a longer character.
    kInvalid,     // `length` bytes (1..3) are a maximal ill-formed subpart: one U+FFFD.
  };
  Kind kind;
  size_t length;
};

// Classifies the character starting at text[0]; `text` must not be empty.
Utf8Prefix ReadUtf8Prefix(absl::string_view text);

// Replaces each maximal ill-formed subpart with U+FFFD, exactly as Rust's
// String::from_utf8_lossy and Python's bytes.decode('utf-8', 'replace') do. A truncated character
// at the end counts as ill-formed.
std::string ToValidUtf8(absl::string_view bytes);

// True when `bytes` is entirely well-formed UTF-8.
bool IsValidUtf8(absl::string_view bytes);

// Appends the UTF-8 encoding of `code_point` (must be a scalar value) to `out`.
void AppendUtf8(char32_t code_point, std::string* out);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_UTF8_H_
