// Random text for the tokenizer tests: strings built from the pieces that stress a byte-level
// BPE pre-tokenizer (contractions, digit runs, whitespace and newline runs, punctuation, CJK,
// emoji with joiners, combining marks, special-token spellings), plus raw invalid bytes.
#ifndef ARBOR_TESTS_MODEL_TOKENIZER_RANDOM_TEXT_H_
#define ARBOR_TESTS_MODEL_TOKENIZER_RANDOM_TEXT_H_

#include <random>
#include <string>
#include <vector>

// TestSeed(): ARBOR_TEST_SEED replays a failure's strings.
#include "tests/support/test_seed.h"

namespace arbor::model {

// `pieces` random fragments, each valid UTF-8 (so the text is too).
inline std::string RandomUnicodeText(std::mt19937& rng, int pieces) {
  static const std::vector<std::string> kFragments = {"the",
                                                      " cat",
                                                      " sat",
                                                      "Hello",
                                                      " WORLD",
                                                      "'s",
                                                      "'T",
                                                      "'re",
                                                      "'ll",
                                                      "'ve",
                                                      "'d",
                                                      "'m",
                                                      " don't",
                                                      "I'M",
                                                      "12",
                                                      "3456789",
                                                      " 2024",
                                                      "3.14",
                                                      "1,000",
                                                      " ",
                                                      "  ",
                                                      "   ",
                                                      "\t",
                                                      "\n",
                                                      "\n\n",
                                                      "\r\n",
                                                      " \n ",
                                                      "...",
                                                      " ...",
                                                      "!?",
                                                      "--",
                                                      "((",
                                                      "\"",
                                                      "#",
                                                      "$5",
                                                      "@",
                                                      "→",
                                                      "中文",
                                                      "日本語の",
                                                      "한국어",
                                                      "Ελλάδα",
                                                      "Привет",
                                                      "😀",
                                                      "👩‍💻",
                                                      "🇫🇷",
                                                      "e\xCC\x81",
                                                      "a\xCC\x88\xCC\x81",
                                                      "\xE2\x80\x8B",
                                                      "\xC2\xA0",
                                                      "\xE3\x80\x80",
                                                      "<|eot_id|>",
                                                      "<|begin_of_text|>",
                                                      "<|",
                                                      "|>",
                                                      "<custom>",
                                                      "x",
                                                      "Z",
                                                      "_",
                                                      "é",
                                                      "ß",
                                                      "ﬁ",
                                                      "١٢٣"};
  std::uniform_int_distribution<size_t> pick(0, kFragments.size() - 1);
  std::string text;
  for (int i = 0; i < pieces; ++i) text += kFragments[pick(rng)];
  return text;
}

// Random code points from several planes (no surrogates), UTF-8 encoded.
inline std::string RandomCodePoints(std::mt19937& rng, int count) {
  std::string text;
  std::uniform_int_distribution<int> plane(0, 9);
  for (int i = 0; i < count; ++i) {
    char32_t c;
    switch (plane(rng)) {
      case 0:
      case 1:
      case 2:
        c = std::uniform_int_distribution<int>(0x20, 0x7E)(rng);
        break;
      case 3:
        c = std::uniform_int_distribution<int>(0x00, 0x20)(rng);
        break;
      case 4:
        c = std::uniform_int_distribution<int>(0x80, 0x7FF)(rng);
        break;
      case 5:
        c = std::uniform_int_distribution<int>(0x800, 0xD7FF)(rng);
        break;
      case 6:
        c = std::uniform_int_distribution<int>(0xE000, 0xFFFD)(rng);
        break;
      case 7:
        c = std::uniform_int_distribution<int>(0x300, 0x36F)(rng);
        break;
      case 8:
        c = std::uniform_int_distribution<int>(0x1F300, 0x1FAFF)(rng);
        break;
      default:
        c = std::uniform_int_distribution<int>(0x10000, 0x10FFFF)(rng);
        break;
    }
    if (c < 0x80) {
      text.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      text.push_back(static_cast<char>(0xC0 | (c >> 6)));
      text.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      text.push_back(static_cast<char>(0xE0 | (c >> 12)));
      text.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      text.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      text.push_back(static_cast<char>(0xF0 | (c >> 18)));
      text.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      text.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      text.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return text;
}

// Arbitrary bytes: mostly invalid UTF-8.
inline std::string RandomBytes(std::mt19937& rng, int count) {
  std::string bytes;
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < count; ++i) bytes.push_back(static_cast<char>(byte(rng)));
  return bytes;
}

}  // namespace arbor::model

#endif  // ARBOR_TESTS_MODEL_TOKENIZER_RANDOM_TEXT_H_
