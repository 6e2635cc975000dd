// The registry's contract: determinism, item shape, ids, errors, and one golden item per family.
#include "tools/eval/tasks/task_generators.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/tools/eval/tasks/test_items.h"

namespace arbor::tools::eval {
namespace {

std::vector<std::string> Dumps(const std::vector<nlohmann::json>& items) {
  std::vector<std::string> out;
  for (const nlohmann::json& item : items) out.push_back(item.dump());
  return out;
}

// The items without their ids, which name the seed and so always differ between seeds.
std::vector<std::string> Contents(std::vector<nlohmann::json> items) {
  for (nlohmann::json& item : items) item.erase("id");
  return Dumps(items);
}

TEST(TaskGenerators, FamiliesInFixedOrder) {
  EXPECT_EQ(TaskFamilies(), (std::vector<std::string>{"arithmetic", "word_problems", "counting",
                                                      "letters", "choice"}));
  for (const std::string& family : TaskFamilies()) {
    absl::StatusOr<int> max_level = MaxLevel(family);
    ASSERT_TRUE(max_level.ok()) << family;
    EXPECT_GE(*max_level, 5) << family << ": too few levels to bracket a model";
  }
}

TEST(TaskGenerators, SameArgumentsSameItems) {
  for (const std::string& family : TaskFamilies()) {
    const int max_level = *MaxLevel(family);
    for (int level : {1, max_level}) {
      for (uint64_t seed : {uint64_t{1}, uint64_t{0xfeedfacecafebeef}}) {
        SCOPED_TRACE(testing::Message() << family << " L" << level << " seed " << seed);
        const std::vector<std::string> a = Dumps(MustGenerate(family, level, 40, seed));
        const std::vector<std::string> b = Dumps(MustGenerate(family, level, 40, seed));
        EXPECT_EQ(a, b);
        // A smaller count is a prefix of a larger one.
        const std::vector<std::string> head = Dumps(MustGenerate(family, level, 7, seed));
        EXPECT_EQ(head, std::vector<std::string>(a.begin(), a.begin() + 7));
      }
    }
  }
}

TEST(TaskGenerators, DifferentSeedsOrLevelsDifferentItems) {
  for (const std::string& family : TaskFamilies()) {
    SCOPED_TRACE(family);
    const std::vector<std::string> seed1 = Contents(MustGenerate(family, 3, 20, 1));
    const std::vector<std::string> seed2 = Contents(MustGenerate(family, 3, 20, 2));
    EXPECT_NE(seed1, seed2);
    // Streams are not shifted copies of one another: few items of one seed recur in the other.
    const std::set<std::string> in_seed1(seed1.begin(), seed1.end());
    int shared = 0;
    for (const std::string& item : seed2) shared += in_seed1.count(item);
    EXPECT_LE(shared, 2);
    // Levels are separate streams too (contents differ beyond the level field).
    std::vector<nlohmann::json> level4 = MustGenerate(family, 4, 20, 1);
    for (nlohmann::json& item : level4) item["level"] = 3;
    EXPECT_NE(Contents(level4), seed1);
  }
}

// The first item of each family at level 1, seed 1. A change to a generator's stream or wording
// changes these, and with them every calibration made so far: update them on purpose only.
TEST(TaskGenerators, GoldenFirstItems) {
  const std::vector<std::pair<std::string, std::string>> golden = {
      {"arithmetic",
       R"json({"answer":"11","family":"arithmetic","id":"arithmetic-L1-s1-0","level":1,"match":"number","max_tokens":32,"messages":[{"content":"What is 3 + 8? Answer with just the number.","role":"user"}]})json"},
      {"word_problems",
       R"json({"answer":"29","family":"word_problems","id":"word_problems-L1-s1-0","level":1,"match":"number","max_tokens":40,"messages":[{"content":"Olivia has 18 beads. Olivia finds 11 more beads. How many beads does Olivia have now? Answer with just the number.","role":"user"}]})json"},
      {"counting",
       R"json({"answer":"8","family":"counting","id":"counting-L1-s1-0","level":1,"match":"number","max_tokens":32,"messages":[{"content":"Which number is larger, 8 or 1? Answer with just the number.","role":"user"}]})json"},
      {"letters",
       R"json({"answer":"nif","extract":"^\\s*(?:[^\\n]*[^A-Za-z\\n])?([A-Za-z]+)","family":"letters","id":"letters-L1-s1-0","level":1,"match":"icase","max_tokens":16,"messages":[{"content":"Spell the word \"fin\" backwards. Answer with just the reversed word.","role":"user"}]})json"},
      {"choice",
       R"json({"answer":"9","choices":["9","3","0","1"],"family":"choice","id":"choice-L1-s1-0","level":1,"match":"exact","messages":[{"content":"What is 8 + 1? Options: 9, 3, 0, 1. Answer with just the number.","role":"user"}]})json"},
  };
  ASSERT_EQ(golden.size(), TaskFamilies().size());
  for (const auto& [family, line] : golden) {
    const std::vector<nlohmann::json> items = MustGenerate(family, 1, 1, 1);
    ASSERT_EQ(items.size(), 1u) << family;
    EXPECT_EQ(items[0].dump(), line) << family;
  }
}

TEST(TaskGenerators, EveryItemHasTheFormatsFields) {
  const std::set<std::string> allowed_keys = {
      "id", "messages", "answer", "match", "extract", "choices", "family", "level", "max_tokens"};
  for (const std::string& family : TaskFamilies()) {
    const int max_level = *MaxLevel(family);
    for (int level = 1; level <= max_level; ++level) {
      const std::vector<nlohmann::json> items = MustGenerate(family, level, 60, 7);
      ASSERT_EQ(items.size(), 60u) << family << " L" << level;
      for (const nlohmann::json& item : items) {
        SCOPED_TRACE(item.dump());
        ASSERT_TRUE(item.is_object());
        for (const auto& [key, value] : item.items()) EXPECT_TRUE(allowed_keys.count(key)) << key;
        EXPECT_FALSE(item.contains("prompt"));  // exactly one of prompt / messages
        ASSERT_TRUE(item.at("id").is_string());
        ASSERT_TRUE(item.at("messages").is_array());
        ASSERT_EQ(item.at("messages").size(), 1u);
        EXPECT_EQ(item.at("messages")[0].at("role"), "user");
        ASSERT_TRUE(item.at("messages")[0].at("content").is_string());
        EXPECT_NE(UserText(item).find("Answer with just the"), std::string::npos);
        ASSERT_TRUE(item.at("answer").is_string());
        const std::string answer = item.at("answer").get<std::string>();
        EXPECT_FALSE(answer.empty());
        const std::string match = item.at("match").get<std::string>();
        EXPECT_TRUE(match == "number" || match == "exact" || match == "icase") << match;
        if (match == "number") {
          EXPECT_TRUE(std::regex_match(answer, std::regex("[0-9]+"))) << answer;
        }
        EXPECT_EQ(item.at("family"), family);
        EXPECT_EQ(item.at("level"), level);
        if (item.contains("max_tokens")) {
          ASSERT_TRUE(item.at("max_tokens").is_number_integer());
          EXPECT_GT(item.at("max_tokens").get<int>(), 0);
        }
        if (item.contains("choices")) {
          ASSERT_TRUE(item.at("choices").is_array());
          const std::vector<std::string> choices = item.at("choices");
          std::set<std::string> distinct(choices.begin(), choices.end());
          EXPECT_EQ(distinct.size(), choices.size()) << "duplicate choices";
          EXPECT_EQ(std::count(choices.begin(), choices.end(), answer), 1);
          EXPECT_GE(choices.size(), 2u);
          for (const std::string& choice : choices) {
            EXPECT_FALSE(choice.empty());
            EXPECT_NE(choice.front(), ' ') << "choices continue the assistant turn directly";
          }
        }
      }
    }
  }
}

TEST(TaskGenerators, ExtractRegexesFindTheAnswer) {
  for (const std::string& family : TaskFamilies()) {
    const int max_level = *MaxLevel(family);
    for (int level = 1; level <= max_level; ++level) {
      for (const nlohmann::json& item : MustGenerate(family, level, 40, 11)) {
        if (!item.contains("extract")) continue;
        SCOPED_TRACE(item.dump());
        const std::string pattern = item.at("extract").get<std::string>();
        ASSERT_NO_THROW(std::regex(pattern, std::regex::ECMAScript));
        const std::string answer = item.at("answer").get<std::string>();
        for (const std::string& output :
             {answer, "The answer is " + answer + ".", "\n  \"" + answer + "\"\nBecause ...",
              "**" + answer + "**"}) {
          EXPECT_EQ(Extract(pattern, output), answer) << "output: " << output;
        }
      }
    }
  }
}

TEST(TaskGenerators, IdsUniqueAndNamed) {
  for (const std::string& family : TaskFamilies()) {
    const std::vector<nlohmann::json> items = MustGenerate(family, 1, 1000, 5);
    ASSERT_EQ(items.size(), 1000u);
    std::set<std::string> ids;
    for (const nlohmann::json& item : items) ids.insert(item.at("id").get<std::string>());
    EXPECT_EQ(ids.size(), 1000u) << family;
    EXPECT_EQ(items[0].at("id"), family + "-L1-s5-0");
    EXPECT_EQ(items[999].at("id"), family + "-L1-s5-999");
  }
  const std::vector<nlohmann::json> big_seed =
      MustGenerate("arithmetic", 2, 1, 18446744073709551615ull);
  ASSERT_EQ(big_seed.size(), 1u);
  EXPECT_EQ(big_seed[0].at("id"), "arithmetic-L2-s18446744073709551615-0");
}

TEST(TaskGenerators, QuestionsDistinctWhereTheLevelHasEnough) {
  for (const std::string& family : TaskFamilies()) {
    const std::vector<nlohmann::json> items = MustGenerate(family, 3, 200, 9);
    std::set<std::string> questions;
    for (const nlohmann::json& item : items) questions.insert(UserText(item));
    EXPECT_EQ(questions.size(), items.size()) << family;
  }
  // Single-digit sums run out (81 of them); the set still has the count asked for.
  EXPECT_EQ(MustGenerate("arithmetic", 1, 300, 9).size(), 300u);
}

TEST(TaskGenerators, RejectsBadArguments) {
  absl::StatusOr<int> unknown_max = MaxLevel("poetry");
  EXPECT_EQ(unknown_max.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<nlohmann::json>> unknown = GenerateTasks("poetry", 1, 1, 1);
  ASSERT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  for (const absl::Status& status : {unknown_max.status(), unknown.status()}) {
    EXPECT_NE(status.message().find("family"), absl::string_view::npos) << status;
    EXPECT_NE(status.message().find("poetry"), absl::string_view::npos) << status;
    for (const std::string& family : TaskFamilies()) {
      EXPECT_NE(status.message().find(family), absl::string_view::npos) << status;
    }
  }

  for (const std::string& family : TaskFamilies()) {
    const int max_level = *MaxLevel(family);
    for (int level : {0, -1, max_level + 1}) {
      absl::StatusOr<std::vector<nlohmann::json>> bad = GenerateTasks(family, level, 1, 1);
      ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << family << level;
      EXPECT_NE(bad.status().message().find("level"), absl::string_view::npos) << bad.status();
    }
    absl::StatusOr<std::vector<nlohmann::json>> negative = GenerateTasks(family, 1, -1, 1);
    ASSERT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(negative.status().message().find("count"), absl::string_view::npos);
    absl::StatusOr<std::vector<nlohmann::json>> huge =
        GenerateTasks(family, 1, kMaxTaskCount + 1, 1);
    EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
    absl::StatusOr<std::vector<nlohmann::json>> none = GenerateTasks(family, 1, 0, 1);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
  }
}

}  // namespace
}  // namespace arbor::tools::eval
