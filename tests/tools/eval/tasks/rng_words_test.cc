// The random source's portability guarantees and the word lists' invariants.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tools/eval/tasks/rng.h"
#include "tools/eval/tasks/words.h"

namespace arbor::tools::eval {
namespace {

TEST(TaskRng, EngineIsTheStandardOne) {
  // The standard fixes the 10000th output of a default-seeded mt19937_64.
  std::mt19937_64 engine;
  engine.discard(9999);
  EXPECT_EQ(engine(), 9981545732273789042ull);
}

TEST(TaskRng, BoundedDrawsStayInRangeAndCoverIt) {
  TaskRng rng(42);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t x = rng.Below(7);
    ASSERT_LT(x, 7u);
    ++seen[x];
  }
  for (int count : seen) EXPECT_NEAR(count, 1000, 150);
  for (int i = 0; i < 1000; ++i) {
    const int64_t x = rng.Between(-3, 3);
    EXPECT_GE(x, -3);
    EXPECT_LE(x, 3);
  }
  EXPECT_EQ(rng.Below(1), 0u);
  EXPECT_EQ(rng.Between(5, 5), 5);
}

TEST(TaskRng, SampleAndShuffleArePermutations) {
  TaskRng rng(7);
  const std::vector<int> items = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<int> sample = rng.Sample(items, 4);
  EXPECT_EQ(sample.size(), 4u);
  EXPECT_EQ(std::set<int>(sample.begin(), sample.end()).size(), 4u);
  std::vector<int> shuffled = items;
  rng.Shuffle(shuffled);
  EXPECT_EQ(std::multiset<int>(shuffled.begin(), shuffled.end()),
            std::multiset<int>(items.begin(), items.end()));
}

TEST(TaskRng, StreamSeedMixesEveryArgument) {
  const uint64_t base = StreamSeed("arithmetic", 1, 1);
  EXPECT_EQ(base, StreamSeed("arithmetic", 1, 1));
  EXPECT_NE(base, StreamSeed("arithmetic", 1, 2));
  EXPECT_NE(base, StreamSeed("arithmetic", 2, 1));
  EXPECT_NE(base, StreamSeed("counting", 1, 1));
  // Neighbouring seeds give unrelated engine seeds, not neighbouring ones.
  EXPECT_GT(StreamSeed("arithmetic", 1, 2) ^ base, uint64_t{1} << 20);
}

TEST(Words, CommonWordsArePlainAndUnique) {
  std::set<std::string> seen;
  for (absl::string_view w : CommonWords()) {
    EXPECT_GE(w.size(), 3u);
    EXPECT_LE(w.size(), 12u);
    for (char c : w) EXPECT_TRUE(c >= 'a' && c <= 'z') << w;
    EXPECT_TRUE(seen.insert(std::string(w)).second) << "duplicate " << w;
  }
  EXPECT_GE(seen.size(), 300u);
  // Enough words at each length the letters family asks for.
  EXPECT_GE(CommonWordsOfLength(3, 3).size(), 20u);
  EXPECT_GE(CommonWordsOfLength(10, 12).size(), 20u);
}

TEST(Words, CategoriesAreDisjointAndUnambiguous) {
  std::set<std::string> seen;
  std::set<int> groups;
  for (const WordCategory& category : WordCategories()) {
    EXPECT_GE(category.words.size(), 8u) << category.name;
    groups.insert(category.group);
    for (absl::string_view w : category.words) {
      for (char c : w) EXPECT_TRUE(c >= 'a' && c <= 'z') << w;
      EXPECT_TRUE(seen.insert(std::string(w)).second) << w << " is in two categories";
    }
  }
  EXPECT_GE(groups.size(), 5u);
  EXPECT_EQ(seen.count("orange"), 0u);
  EXPECT_EQ(seen.count("tomato"), 0u);
}

TEST(Words, NamesTakeAPlainPossessive) {
  EXPECT_GE(GivenNames().size(), 20u);
  for (absl::string_view name : GivenNames()) {
    EXPECT_NE(name.back(), 's') << name;
    EXPECT_TRUE(name[0] >= 'A' && name[0] <= 'Z') << name;
  }
}

}  // namespace
}  // namespace arbor::tools::eval
