// The "letters" family: spelling and word manipulation, each item one of four kinds drawn at
// random.
//
//   reverse:  Spell the word "garden" backwards.                   -> nedrag
//   nth:      What is the 3rd letter of the word "garden"?         -> r
//   acronym:  first letters of a list of words, joined             -> RLA
//   first:    which of a list of words comes first alphabetically  -> apple
//
// Level L (1..6) sets the length: reverse and nth use words of 3, 4, 5, 6-7, 8-9, then 10-12
// letters; acronym and first use L + 1 words. For first, the words at levels 1 and 2 start with
// different letters; from level 3 they all share their first letter, so a later one decides.
//
// Matched ignoring case. Models often wrap the word ("The answer is "nedrag"."), so the extract
// regex takes the last run of letters on the first non-blank line of the output.
#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "tools/eval/tasks/family.h"
#include "tools/eval/tasks/words.h"

namespace arbor::tools::eval {
namespace {

constexpr int kLettersMaxLevel = 6;

// The last word on the first non-blank line: "nedrag", "The answer is nedrag." and
// "nedrag\nbecause ..." all give "nedrag". `^` without the multiline flag only matches at the
// start of the output, so there is at most one match.
constexpr absl::string_view kLastWordOfFirstLine = R"(^\s*(?:[^\n]*[^A-Za-z\n])?([A-Za-z]+))";

struct LengthRange {
  size_t min, max;
};
constexpr LengthRange kWordLengthAtLevel[] = {{3, 3}, {4, 4}, {5, 5}, {6, 7}, {8, 9}, {10, 12}};

absl::string_view WordForLevel(int level, TaskRng& rng) {
  const LengthRange range = kWordLengthAtLevel[level - 1];
  return rng.Pick(CommonWordsOfLength(range.min, range.max));
}

std::string Ordinal(size_t n) {
  const size_t mod100 = n % 100;
  const char* suffix = "th";
  if (mod100 < 11 || mod100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return absl::StrCat(n, suffix);
}

nlohmann::json WordItem(std::string question, absl::string_view format, std::string answer) {
  nlohmann::json item = ChatItem(absl::StrCat(question, " Answer with just the ", format, "."),
                                 std::move(answer), "icase");
  item["extract"] = std::string(kLastWordOfFirstLine);
  item["max_tokens"] = 16;
  return item;
}

nlohmann::json ReverseItem(int level, TaskRng& rng) {
  const std::string word(WordForLevel(level, rng));
  return WordItem(absl::StrCat("Spell the word \"", word, "\" backwards."), "reversed word",
                  std::string(word.rbegin(), word.rend()));
}

nlohmann::json NthLetterItem(int level, TaskRng& rng) {
  const absl::string_view word = WordForLevel(level, rng);
  const size_t index = rng.Below(word.size());
  return WordItem(
      absl::StrCat("What is the ", Ordinal(index + 1), " letter of the word \"", word, "\"?"),
      "letter", std::string(1, word[index]));
}

enum class FirstLetters { kAny, kDistinct, kSame };

// `n` distinct words whose first letters follow `first_letters`.
std::vector<absl::string_view> WordList(size_t n, FirstLetters first_letters, TaskRng& rng) {
  std::span<const absl::string_view> all = CommonWords();
  std::vector<absl::string_view> pool(all.begin(), all.end());
  if (first_letters == FirstLetters::kSame) {
    // std::map: letters in alphabetical order, so the draw is the same on every library.
    std::map<char, std::vector<absl::string_view>> by_letter;
    for (absl::string_view w : all) by_letter[w[0]].push_back(w);
    std::vector<char> letters;
    for (const auto& [letter, words] : by_letter) {
      if (words.size() >= n) letters.push_back(letter);
    }
    pool = by_letter[rng.Pick(letters)];
  }
  while (true) {
    std::vector<absl::string_view> words = rng.Sample(pool, n);
    if (first_letters != FirstLetters::kDistinct) return words;
    std::string firsts;
    for (absl::string_view w : words) firsts.push_back(w[0]);
    std::sort(firsts.begin(), firsts.end());
    if (std::adjacent_find(firsts.begin(), firsts.end()) == firsts.end()) return words;
  }
}

nlohmann::json AcronymItem(int level, TaskRng& rng) {
  const std::vector<absl::string_view> words = WordList(level + 1, FirstLetters::kAny, rng);
  std::string answer;
  for (absl::string_view w : words) answer.push_back(absl::ascii_toupper(w[0]));
  return WordItem(absl::StrCat("Write the first letter of each of these words, joined together: ",
                               absl::StrJoin(words, ", "), "."),
                  "letters", std::move(answer));
}

nlohmann::json FirstAlphabeticalItem(int level, TaskRng& rng) {
  const std::vector<absl::string_view> words =
      WordList(level + 1, level >= 3 ? FirstLetters::kSame : FirstLetters::kDistinct, rng);
  const absl::string_view first = *std::min_element(words.begin(), words.end());
  return WordItem(absl::StrCat("Which of these words comes first in alphabetical order: ",
                               absl::StrJoin(words, ", "), "?"),
                  "word", std::string(first));
}

nlohmann::json MakeLettersItem(int level, TaskRng& rng) {
  switch (rng.Below(4)) {
    case 0:
      return ReverseItem(level, rng);
    case 1:
      return NthLetterItem(level, rng);
    case 2:
      return AcronymItem(level, rng);
    default:
      return FirstAlphabeticalItem(level, rng);
  }
}

}  // namespace

const TaskFamily& LettersFamily() {
  static constexpr TaskFamily kFamily{"letters", kLettersMaxLevel, &MakeLettersItem};
  return kFamily;
}

}  // namespace arbor::tools::eval
