// Each family's answers, re-derived from the prompt text independently of the generators, and
// the level knobs checked against what the family headers promise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/tools/eval/tasks/test_items.h"
#include "tools/eval/tasks/arithmetic.h"
#include "tools/eval/tasks/rng.h"
#include "tools/eval/tasks/word_problems.h"
#include "tools/eval/tasks/words.h"

namespace arbor::tools::eval {
namespace {

constexpr int kItemsPerLevel = 150;
constexpr uint64_t kSeed = 2024;

std::vector<std::string> Split(const std::string& text, const std::string& separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + separator.size();
  }
}

int Digits(int64_t n) { return static_cast<int>(std::to_string(n).size()); }

int64_t Evaluate(int64_t a, char op, int64_t b) {
  return op == '+' ? a + b : op == '-' ? a - b : a * b;
}

// Items of every level of `family`, with their level.
std::vector<nlohmann::json> AllLevels(const std::string& family) {
  std::vector<nlohmann::json> all;
  for (int level = 1; level <= *MaxLevel(family); ++level) {
    for (nlohmann::json& item : MustGenerate(family, level, kItemsPerLevel, kSeed)) {
      all.push_back(std::move(item));
    }
  }
  return all;
}

TEST(ArithmeticAnswers, RecomputedFromThePrompt) {
  const std::regex question(R"(What is (\d+) ([-+*]) (\d+)\? Answer with just the number\.)");
  for (const nlohmann::json& item : AllLevels("arithmetic")) {
    SCOPED_TRACE(item.dump());
    const int level = item.at("level");
    std::smatch m;
    const std::string text = UserText(item);
    ASSERT_TRUE(std::regex_match(text, m, question));
    const int64_t a = std::stoll(m[1]), b = std::stoll(m[3]);
    const char op = m[2].str()[0];
    EXPECT_EQ(item.at("answer"), std::to_string(Evaluate(a, op, b)));
    EXPECT_GE(Evaluate(a, op, b), 0);
    if (level == 1) {
      EXPECT_EQ(op, '+');
      EXPECT_EQ(Digits(a), 1);
      EXPECT_EQ(Digits(b), 1);
    } else if (op == '*') {
      EXPECT_EQ(Digits(a), (level + 1) / 2);
      EXPECT_EQ(Digits(b), level / 2);
      EXPECT_GE(std::min(a, b), 2);
    } else {
      EXPECT_EQ(Digits(a), level);
      EXPECT_EQ(Digits(b), level);
    }
  }
}

TEST(ArithmeticAnswers, AllOperationsAppearFromLevelTwo) {
  std::set<char> ops;
  for (const nlohmann::json& item : MustGenerate("arithmetic", 4, 60, kSeed)) {
    const std::string text = UserText(item);
    for (char op : {'+', '-', '*'}) {
      if (text.find(std::string(" ") + op + " ") != std::string::npos) ops.insert(op);
    }
  }
  EXPECT_EQ(ops.size(), 3u);
}

// Re-applies a problem's steps: every intermediate amount positive, every division exact, the
// number of operations the level.
void CheckWordProblem(const WordProblem& problem, int level) {
  int64_t amount = problem.start;
  ASSERT_GE(amount, 2);
  int operations = 0;
  for (const Step& step : problem.steps) {
    switch (step.kind) {
      case StepKind::kAdd:
        amount += step.a;
        break;
      case StepKind::kSubtract:
        amount -= step.a;
        break;
      case StepKind::kAddGroups:
        amount += step.a * step.b;
        break;
      case StepKind::kMultiply:
        EXPECT_TRUE(step.a == 2 || step.a == 3);
        amount *= step.a;
        break;
      case StepKind::kShare:
        EXPECT_EQ(amount % step.a, 0) << "inexact division";
        amount /= step.a;
        break;
    }
    if (level <= 2) {
      EXPECT_TRUE(step.kind == StepKind::kAdd || step.kind == StepKind::kSubtract);
    }
    EXPECT_GE(amount, 1) << "an intermediate amount went below 1";
    operations += StepOperations(step.kind);
    // The step's numbers are in the text (a multiplier as "double" or "triple").
    const std::string number = step.kind != StepKind::kMultiply ? std::to_string(step.a)
                               : step.a == 2                    ? "double"
                                                                : "triple";
    EXPECT_NE(problem.text.find(number), std::string::npos) << number;
    if (step.kind == StepKind::kAddGroups) {
      EXPECT_NE(problem.text.find(std::to_string(step.b)), std::string::npos);
    }
  }
  EXPECT_EQ(operations, level);
  EXPECT_EQ(amount, problem.answer);
  EXPECT_LT(problem.answer, 1000) << "numbers should stay small";
  EXPECT_NE(problem.text.find("Answer with just the number."), std::string::npos);
}

TEST(WordProblemAnswers, StepsReappliedGiveTheAnswer) {
  for (int level = 1; level <= kWordProblemsMaxLevel; ++level) {
    TaskRng rng(SplitMix64(static_cast<uint64_t>(level)));
    std::set<StepKind> kinds;
    for (int i = 0; i < 500; ++i) {
      const WordProblem problem = MakeWordProblem(level, rng);
      SCOPED_TRACE(problem.text);
      CheckWordProblem(problem, level);
      for (const Step& step : problem.steps) kinds.insert(step.kind);
    }
    EXPECT_EQ(kinds.size(), level <= 2 ? 2u : 5u) << "level " << level;
  }
}

TEST(WordProblemAnswers, ItemsAreTheStructuredProblems) {
  // Index 0 of a set is never redrawn, so it is the first problem of the family's stream.
  for (int level = 1; level <= kWordProblemsMaxLevel; ++level) {
    for (uint64_t seed : {uint64_t{1}, uint64_t{77}}) {
      const std::vector<nlohmann::json> items = MustGenerate("word_problems", level, 1, seed);
      ASSERT_EQ(items.size(), 1u);
      TaskRng rng(StreamSeed("word_problems", level, seed));
      const WordProblem problem = MakeWordProblem(level, rng);
      EXPECT_EQ(UserText(items[0]), problem.text);
      EXPECT_EQ(items[0].at("answer"), std::to_string(problem.answer));
    }
  }
}

TEST(WordProblemAnswers, UsesManyStories) {
  std::set<std::string> openings;
  for (const nlohmann::json& item : MustGenerate("word_problems", 1, 300, kSeed)) {
    // The story shows in the question sentence, with the name and object swapped out.
    const std::string text = UserText(item);
    const size_t how = text.find("How many");
    ASSERT_NE(how, std::string::npos);
    std::string question = text.substr(how);
    question = std::regex_replace(question, std::regex("[A-Z][a-z]+'s|[A-Z][a-z]+ have"), "X");
    openings.insert(question.substr(0, question.find(' ', 10)));
  }
  EXPECT_GE(openings.size(), 3u);
  std::set<std::string> first_sentences;
  for (const nlohmann::json& item : MustGenerate("word_problems", 1, 300, kSeed)) {
    const std::string text = UserText(item);
    first_sentences.insert(
        std::regex_replace(text.substr(0, text.find('.')), std::regex("^[A-Z][a-z]+|[0-9]+"), "X"));
  }
  EXPECT_GE(first_sentences.size(), 6u);
}

TEST(CountingAnswers, RecomputedFromThePrompt) {
  const std::regex letter(
      R"re(How many times does the letter "([a-z])" appear in "([a-z ]+)"\? Answer with just the number\.)re");
  const std::regex list(
      R"(How many items are in this list: ([a-z, ]+)\? Answer with just the number\.)");
  const std::regex words(
      R"re(How many words are in this sentence: "([a-z ]+)"\? Answer with just the number\.)re");
  const std::regex larger(
      R"(Which number is larger, (\d+) or (\d+)\? Answer with just the number\.)");
  std::map<std::string, int> kinds;
  for (const nlohmann::json& item : AllLevels("counting")) {
    SCOPED_TRACE(item.dump());
    const int level = item.at("level");
    const std::string text = UserText(item);
    const std::string answer = item.at("answer");
    std::smatch m;
    if (std::regex_match(text, m, letter)) {
      ++kinds["letter"];
      const std::string haystack = m[2];
      const int count =
          static_cast<int>(std::count(haystack.begin(), haystack.end(), m[1].str()[0]));
      EXPECT_GE(count, 1);
      EXPECT_EQ(answer, std::to_string(count));
      const size_t n_words = Split(haystack, " ").size();
      if (level <= 2) {
        EXPECT_EQ(n_words, 1u);
        EXPECT_EQ(haystack.size() <= 5, level == 1);
      } else {
        EXPECT_EQ(n_words, std::vector<size_t>({2, 3, 4, 6})[level - 3]);
      }
    } else if (std::regex_match(text, m, list)) {
      ++kinds["list"];
      const std::vector<std::string> items = Split(m[1], ", ");
      EXPECT_EQ(answer, std::to_string(items.size()));
      EXPECT_GE(items.size(), 2u * level);
      EXPECT_LE(items.size(), 3u * level);
      EXPECT_EQ(std::set<std::string>(items.begin(), items.end()).size(), items.size());
    } else if (std::regex_match(text, m, words)) {
      ++kinds["words"];
      const size_t n = Split(m[1], " ").size();
      EXPECT_EQ(answer, std::to_string(n));
      EXPECT_GE(n, 2u * level);
      EXPECT_LE(n, 3u * level);
    } else if (std::regex_match(text, m, larger)) {
      ++kinds["larger"];
      const std::string a = m[1], b = m[2];
      EXPECT_NE(a, b);
      EXPECT_EQ(answer, std::to_string(std::max(std::stoll(a), std::stoll(b))));
      EXPECT_EQ(a.size(), static_cast<size_t>(level));
      EXPECT_EQ(b.size(), static_cast<size_t>(level));
      EXPECT_EQ(a.substr(0, level / 2), b.substr(0, level / 2));
    } else {
      ADD_FAILURE() << "unrecognised counting prompt: " << text;
    }
  }
  EXPECT_EQ(kinds.size(), 4u);
}

std::string Reverse(std::string s) {
  std::reverse(s.begin(), s.end());
  return s;
}

bool ICaseEqual(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

TEST(LetterAnswers, RecomputedFromThePrompt) {
  const std::regex reverse(
      R"re(Spell the word "([a-z]+)" backwards\. Answer with just the reversed word\.)re");
  const std::regex nth(
      R"re(What is the (\d+)(st|nd|rd|th) letter of the word "([a-z]+)"\? Answer with just the letter\.)re");
  const std::regex acronym(
      R"(Write the first letter of each of these words, joined together: ([a-z, ]+)\. Answer with just the letters\.)");
  const std::regex first(
      R"(Which of these words comes first in alphabetical order: ([a-z, ]+)\? Answer with just the word\.)");
  const size_t kMinLength[] = {3, 4, 5, 6, 8, 10}, kMaxLength[] = {3, 4, 5, 7, 9, 12};
  std::map<std::string, int> kinds;
  for (const nlohmann::json& item : AllLevels("letters")) {
    SCOPED_TRACE(item.dump());
    const int level = item.at("level");
    const std::string text = UserText(item);
    const std::string answer = item.at("answer");
    EXPECT_EQ(item.at("match"), "icase");
    std::smatch m;
    if (std::regex_match(text, m, reverse)) {
      ++kinds["reverse"];
      EXPECT_TRUE(ICaseEqual(answer, Reverse(m[1])));
      EXPECT_GE(m[1].length(), kMinLength[level - 1]);
      EXPECT_LE(m[1].length(), kMaxLength[level - 1]);
    } else if (std::regex_match(text, m, nth)) {
      ++kinds["nth"];
      const std::string word = m[3];
      const size_t n = std::stoul(m[1]);
      ASSERT_GE(n, 1u);
      ASSERT_LE(n, word.size());
      EXPECT_TRUE(ICaseEqual(answer, word.substr(n - 1, 1)));
      const std::string suffix = m[2];
      EXPECT_EQ(suffix, n == 1 ? "st" : n == 2 ? "nd" : n == 3 ? "rd" : "th");
      EXPECT_GE(word.size(), kMinLength[level - 1]);
      EXPECT_LE(word.size(), kMaxLength[level - 1]);
    } else if (std::regex_match(text, m, acronym)) {
      ++kinds["acronym"];
      std::string letters;
      const std::vector<std::string> words = Split(m[1], ", ");
      for (const std::string& w : words) letters.push_back(w[0]);
      EXPECT_TRUE(ICaseEqual(answer, letters));
      EXPECT_EQ(words.size(), static_cast<size_t>(level) + 1);
    } else if (std::regex_match(text, m, first)) {
      ++kinds["first"];
      const std::vector<std::string> words = Split(m[1], ", ");
      EXPECT_TRUE(ICaseEqual(answer, *std::min_element(words.begin(), words.end())));
      EXPECT_EQ(words.size(), static_cast<size_t>(level) + 1);
      std::set<char> firsts;
      for (const std::string& w : words) firsts.insert(w[0]);
      EXPECT_EQ(firsts.size(), level >= 3 ? 1u : words.size());
    } else {
      ADD_FAILURE() << "unrecognised letters prompt: " << text;
    }
  }
  EXPECT_EQ(kinds.size(), 4u);
}

const WordCategory* CategoryByPhrase(const std::string& phrase) {
  for (const WordCategory& category : WordCategories()) {
    if (std::string(category.phrase) == phrase) return &category;
  }
  return nullptr;
}

const WordCategory* CategoryOf(const std::string& word) {
  for (const WordCategory& category : WordCategories()) {
    for (absl::string_view w : category.words) {
      if (std::string(w) == word) return &category;
    }
  }
  return nullptr;
}

TEST(ChoiceAnswers, RecomputedFromThePrompt) {
  const std::regex sum(
      R"(What is (\d+) ([-+*]) (\d+)\? Options: ([0-9, ]+)\. Answer with just the number\.)");
  const std::regex category(
      R"(Which of these is (a [a-z ]+)\? Options: ([a-z, ]+)\. Answer with just the word\.)");
  std::map<std::string, int> kinds;
  for (const nlohmann::json& item : AllLevels("choice")) {
    SCOPED_TRACE(item.dump());
    const int level = item.at("level");
    const std::string text = UserText(item);
    const std::string answer = item.at("answer");
    const std::vector<std::string> choices = item.at("choices");
    EXPECT_EQ(std::count(choices.begin(), choices.end(), answer), 1);
    std::smatch m;
    if (std::regex_match(text, m, sum)) {
      ++kinds["sum"];
      const int64_t value = Evaluate(std::stoll(m[1]), m[2].str()[0], std::stoll(m[3]));
      EXPECT_EQ(answer, std::to_string(value));
      EXPECT_EQ(Split(m[4], ", "), choices) << "the prompt lists the choices in order";
      EXPECT_EQ(choices.size(), 4u);
      for (const std::string& choice : choices) {
        const int64_t off = std::llabs(std::stoll(choice) - value);
        if (choice == answer) continue;
        if (level <= 2) {
          EXPECT_TRUE(off >= 3 && off <= 9) << off;
        } else if (level <= 4) {
          EXPECT_TRUE(off == 1 || off == 2 || off == 10 || off == 20) << off;
        } else {
          EXPECT_TRUE(off == 1 || off == 10 || off == 100) << off;
        }
      }
    } else if (std::regex_match(text, m, category)) {
      ++kinds["category"];
      const WordCategory* asked = CategoryByPhrase(m[1]);
      ASSERT_NE(asked, nullptr) << m[1];
      EXPECT_EQ(Split(m[2], ", "), choices);
      EXPECT_EQ(choices.size(), level <= 3 ? static_cast<size_t>(level) + 1 : 4u);
      int near = 0;
      for (const std::string& choice : choices) {
        const WordCategory* of = CategoryOf(choice);
        ASSERT_NE(of, nullptr) << choice;
        EXPECT_EQ(of == asked, choice == answer) << choice;
        if (of != asked && of->group == asked->group) ++near;
      }
      EXPECT_EQ(near, level <= 3 ? 0 : level - 3);
    } else {
      ADD_FAILURE() << "unrecognised choice prompt: " << text;
    }
  }
  EXPECT_EQ(kinds.size(), 2u);
}

}  // namespace
}  // namespace arbor::tools::eval
