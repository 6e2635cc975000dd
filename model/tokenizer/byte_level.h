// The GPT-2 "byte-level" alphabet used by Llama 3's tokenizer.json: every byte 0..255 is shown as
// one printable Unicode character (printable Latin-1 bytes as themselves, the others shifted to
// U+0100..U+0143), so that a vocabulary of strings can hold arbitrary bytes.
#ifndef ARBOR_MODEL_TOKENIZER_BYTE_LEVEL_H_
#define ARBOR_MODEL_TOKENIZER_BYTE_LEVEL_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace arbor::model {

// The character standing for `byte`, UTF-8 encoded (1 or 2 bytes).
absl::string_view ByteLevelChar(unsigned char byte);

// Appends the byte-level form of `bytes` (each byte → its character) to `out`.
void AppendByteLevel(absl::string_view bytes, std::string* out);

// The bytes a byte-level string stands for, or nullopt when some character is outside the
// alphabet (then the string is not a byte-level token, e.g. an added token such as "<|eot_id|>"
// written as plain text).
std::optional<std::string> FromByteLevel(absl::string_view text);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_BYTE_LEVEL_H_
