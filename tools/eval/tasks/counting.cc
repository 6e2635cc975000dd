// The "counting" family: counting and comparing, each item one of four kinds drawn at random.
//
//   letters:  How many times does the letter "e" appear in "green tree"?
//             Level 1 is one word of 3-5 letters, level 2 one of 6-12; from level 3 the text is
//             2, 3, 4, then 6 words.
//   list:     How many items are in this list: cat, river, lamp?   2L..3L items at level L.
//   words:    How many words are in this sentence: "..."?          2L..3L words at level L.
//   larger:   Which number is larger, 4817 or 4871?   Two L-digit numbers sharing their first
//             L/2 digits, so the higher the level the later the digit that decides.
//
// Matched as a number (the last number in the output). The letter asked about is taken from a
// random position of the text, so it always occurs and frequent letters come up more often.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "tools/eval/tasks/family.h"
#include "tools/eval/tasks/words.h"

namespace arbor::tools::eval {
namespace {

constexpr int kCountingMaxLevel = 6;
constexpr absl::string_view kAnswerFormat = " Answer with just the number.";

size_t ListLength(int level, TaskRng& rng) {
  return static_cast<size_t>(rng.Between(2 * level, 3 * level));
}

nlohmann::json LetterCountItem(int level, TaskRng& rng) {
  std::string text;
  if (level <= 2) {
    text =
        std::string(rng.Pick(level == 1 ? CommonWordsOfLength(3, 5) : CommonWordsOfLength(6, 12)));
  } else {
    constexpr size_t kWordsAtLevel[] = {2, 3, 4, 6};  // levels 3..6
    text = absl::StrJoin(rng.Sample(CommonWords(), kWordsAtLevel[level - 3]), " ");
  }
  char letter = ' ';
  while (letter == ' ') letter = text[rng.Below(text.size())];
  int count = 0;
  for (char c : text) count += c == letter;
  return ChatItem(absl::StrCat("How many times does the letter \"", std::string(1, letter),
                               "\" appear in \"", text, "\"?", kAnswerFormat),
                  absl::StrCat(count), "number");
}

nlohmann::json ListCountItem(int level, TaskRng& rng) {
  const std::vector<absl::string_view> items = rng.Sample(CommonWords(), ListLength(level, rng));
  return ChatItem(absl::StrCat("How many items are in this list: ", absl::StrJoin(items, ", "), "?",
                               kAnswerFormat),
                  absl::StrCat(items.size()), "number");
}

nlohmann::json WordCountItem(int level, TaskRng& rng) {
  const size_t n = ListLength(level, rng);
  std::vector<absl::string_view> words;
  // Repeats allowed, as in real sentences: a repeated word counts each time.
  for (size_t i = 0; i < n; ++i) words.push_back(rng.Pick(CommonWords()));
  return ChatItem(absl::StrCat("How many words are in this sentence: \"", absl::StrJoin(words, " "),
                               "\"?", kAnswerFormat),
                  absl::StrCat(n), "number");
}

nlohmann::json LargerNumberItem(int level, TaskRng& rng) {
  const int digits = level;
  const int shared = level / 2;
  std::string a, b;
  for (int i = 0; i < digits; ++i) {
    const char lowest = i == 0 ? '1' : '0';  // no leading zero
    a.push_back(static_cast<char>(lowest + rng.Below('9' - lowest + 1)));
    b.push_back(i < shared ? a.back() : static_cast<char>(lowest + rng.Below('9' - lowest + 1)));
  }
  // Same digits: redraw the first unshared one of b so the two differ there.
  if (a == b) {
    const char lowest = shared == 0 ? '1' : '0';
    const uint64_t span = '9' - lowest;  // the digits other than a's
    char c = static_cast<char>(lowest + rng.Below(span));
    if (c >= a[shared]) ++c;
    b[shared] = c;
  }
  const std::string& larger = a > b ? a : b;  // equal lengths: text order is numeric order
  return ChatItem(absl::StrCat("Which number is larger, ", a, " or ", b, "?", kAnswerFormat),
                  larger, "number");
}

nlohmann::json MakeCountingItem(int level, TaskRng& rng) {
  nlohmann::json item;
  switch (rng.Below(4)) {
    case 0:
      item = LetterCountItem(level, rng);
      break;
    case 1:
      item = ListCountItem(level, rng);
      break;
    case 2:
      item = WordCountItem(level, rng);
      break;
    default:
      item = LargerNumberItem(level, rng);
      break;
  }
  item["max_tokens"] = 32;
  return item;
}

}  // namespace

const TaskFamily& CountingFamily() {
  static constexpr TaskFamily kFamily{"counting", kCountingMaxLevel, &MakeCountingItem};
  return kFamily;
}

}  // namespace arbor::tools::eval
