#include "model/tokenizer/byte_level.h"

#include <array>

#include "model/tokenizer/utf8.h"

namespace arbor::model {
namespace {

struct ByteLevelTables {
  std::array<std::string, 256> char_of_byte;
  std::array<int, 512> byte_of_char;  // Code point → byte, -1 outside the alphabet.

  ByteLevelTables() {
    byte_of_char.fill(-1);
    // Bytes that are printable and not whitespace keep their own code point; the others take
    // U+0100 + n in byte order (the bytes_to_unicode() table of GPT-2).
    auto keeps_itself = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = keeps_itself(b) ? static_cast<char32_t>(b) : 256 + next++;
      AppendUtf8(c, &char_of_byte[b]);
      byte_of_char[c] = b;
    }
  }
};

const ByteLevelTables& Tables() {
  static const ByteLevelTables* tables = new ByteLevelTables();
  return *tables;
}

}  // namespace

absl::string_view ByteLevelChar(unsigned char byte) { return Tables().char_of_byte[byte]; }

void AppendByteLevel(absl::string_view bytes, std::string* out) {
  const ByteLevelTables& tables = Tables();
  for (char c : bytes) out->append(tables.char_of_byte[static_cast<unsigned char>(c)]);
}

std::optional<std::string> FromByteLevel(absl::string_view text) {
  const ByteLevelTables& tables = Tables();
  std::string bytes;
  bytes.reserve(text.size());
  while (!text.empty()) {
    const Utf8Prefix prefix = ReadUtf8Prefix(text);
    if (prefix.kind != Utf8Prefix::Kind::kComplete || prefix.length > 2) return std::nullopt;
    char32_t c = static_cast<unsigned char>(text[0]);
    if (prefix.length == 2) {
      c = ((c & 0x1F) << 6) | (static_cast<unsigned char>(text[1]) & 0x3F);
    }
    if (c >= tables.byte_of_char.size() || tables.byte_of_char[c] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(tables.byte_of_char[c]));
    text.remove_prefix(prefix.length);
  }
  return bytes;
}

}  // namespace arbor::model
