// Built-in English word lists the generators draw from: common words, given names, and word
// categories for the "which of these is a ..." items.
//
// Written for this project and kept small and plain so a small model knows the words. Every word
// is lowercase a-z. The categories hold no word whose category is arguable (no "orange", which is
// a colour and a fruit, no "tomato"), and no word sits in two categories.
#ifndef ARBOR_TOOLS_EVAL_TASKS_WORDS_H_
#define ARBOR_TOOLS_EVAL_TASKS_WORDS_H_

#include <cstddef>
#include <span>
#include <vector>

#include "absl/strings/string_view.h"

namespace arbor::tools::eval {

// About four hundred common words of 3 to 12 letters, no duplicates.
std::span<const absl::string_view> CommonWords();

// The common words with min_len <= length <= max_len, in list order.
std::vector<absl::string_view> CommonWordsOfLength(size_t min_len, size_t max_len);

// Given names, none ending in "s" so "Name's" always reads right.
std::span<const absl::string_view> GivenNames();

struct WordCategory {
  absl::string_view name;    // "fruit"
  absl::string_view phrase;  // how a question names a member: "a fruit"
  // Categories sharing a group are near misses for one another (fruit and vegetable; mammal,
  // bird and fish); those in other groups are far ones.
  int group;
  std::span<const absl::string_view> words;
};

std::span<const WordCategory> WordCategories();

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_TASKS_WORDS_H_
