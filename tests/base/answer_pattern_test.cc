// The answer regex: the last match's group, its byte span, bad patterns and the match limits.
#include "base/answer_pattern.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::base {
namespace {

TEST(AnswerPatternTest, LastMatchGroupOneErrorsAndLimits) {
  absl::StatusOr<std::shared_ptr<const AnswerPattern>> p = AnswerPattern::Compile(R"(= *(\d+))");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->LastMatch("1+1 = 2, so 2+2 = 4."), "4");
  EXPECT_EQ((*p)->LastMatch("no answer"), std::nullopt);
  EXPECT_EQ((*p)->LastMatch("= 7 \xff\xfe = 8"), "8");  // Invalid UTF-8 is matched around.
  absl::StatusOr<std::shared_ptr<const AnswerPattern>> bad = AnswerPattern::Compile("(unclosed");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("not a valid regex"));
  // Catastrophic backtracking stops at the match limit with no answer instead of hanging.
  absl::StatusOr<std::shared_ptr<const AnswerPattern>> slow = AnswerPattern::Compile("(a|aa)+b");
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ((*slow)->LastMatch(std::string(60, 'a') + "cb"), std::nullopt);  // ~1e12 paths.
}

TEST(AnswerPatternTest, SpanIsTheGroupsByteRange) {
  absl::StatusOr<std::shared_ptr<const AnswerPattern>> p = AnswerPattern::Compile(R"(is (\d+))");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string text = "it is 12, no, it is 345.";
  const auto span = (*p)->LastMatchSpan(text);
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(text.substr(span->first, span->second - span->first), "345");
  EXPECT_EQ(span->first, text.find("345"));
  // Without a group the whole match is the answer.
  absl::StatusOr<std::shared_ptr<const AnswerPattern>> whole = AnswerPattern::Compile(R"(\d+)");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ((*whole)->LastMatch(text), "345");
}

}  // namespace
}  // namespace arbor::base
