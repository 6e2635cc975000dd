#include "model/tokenizer/utf8.h"

#include <cstdint>

namespace arbor::model {
namespace {

constexpr absl::string_view kReplacement = "\xEF\xBF\xBD";

// Valid range of the second byte for a given lead byte (Unicode Table 3-7); the third and
// fourth bytes are always 80..BF.
bool SecondByteOk(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0:
      return b >= 0xA0 && b <= 0xBF;
    case 0xED:
      return b >= 0x80 && b <= 0x9F;
    case 0xF0:
      return b >= 0x90 && b <= 0xBF;
    case 0xF4:
      return b >= 0x80 && b <= 0x8F;
    default:
      return b >= 0x80 && b <= 0xBF;
  }
}

}  // namespace

Utf8Prefix ReadUtf8Prefix(absl::string_view text) {
  const uint8_t lead = static_cast<uint8_t>(text[0]);
  size_t need;
  if (lead < 0x80) return {Utf8Prefix::Kind::kComplete, 1};
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
  } else {
    return {Utf8Prefix::Kind::kInvalid, 1};
  }
  for (size_t i = 1; i < need; ++i) {
    if (i >= text.size()) return {Utf8Prefix::Kind::kIncomplete, i};
    const uint8_t b = static_cast<uint8_t>(text[i]);
    const bool ok = i == 1 ? SecondByteOk(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return {Utf8Prefix::Kind::kInvalid, i};
  }
  return {Utf8Prefix::Kind::kComplete, need};
}

std::string ToValidUtf8(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    const Utf8Prefix prefix = ReadUtf8Prefix(bytes);
    if (prefix.kind == Utf8Prefix::Kind::kComplete) {
      out.append(bytes.data(), prefix.length);
    } else {
      out.append(kReplacement.data(), kReplacement.size());
    }
    bytes.remove_prefix(prefix.length);
  }
  return out;
}

bool IsValidUtf8(absl::string_view bytes) {
  while (!bytes.empty()) {
    const Utf8Prefix prefix = ReadUtf8Prefix(bytes);
    if (prefix.kind != Utf8Prefix::Kind::kComplete) return false;
    bytes.remove_prefix(prefix.length);
  }
  return true;
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace arbor::model
