// TRACE mode's arithmetic on hand-built traces with known margins: a step's margin, the answer
// span mapped back to tokens (multi-token answers, a character split across tokens, no match),
// and the ranking with and without aggregation, against values worked out by hand.
#include "coordinator/job/trace_choice.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::coordinator {
namespace {

// A byte-level vocabulary; like a real decoder, a trailing incomplete UTF-8 character is held
// back. Token 8 and 9 are the two bytes of "é".
std::string Decode(absl::Span<const int32_t> ids) {
  static const std::map<int32_t, std::string> kPieces = {
      {0, "The"}, {1, " answer"}, {2, " is"}, {3, " 4"}, {4, "2"},     {5, "."},
      {6, "\n"},  {7, " 7"},      {8, "\xC3"}, {9, "\xA9"}, {10, " x"}};
  std::string text;
  for (int32_t id : ids) text += kPieces.at(id);
  size_t cut = text.size();
  while (cut > 0 && (static_cast<unsigned char>(text[cut - 1]) & 0xC0) == 0x80) --cut;
  if (cut > 0 && (static_cast<unsigned char>(text[cut - 1]) & 0xC0) == 0xC0) {
    const unsigned char lead = static_cast<unsigned char>(text[cut - 1]);
    const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (text.size() - (cut - 1) < need) text.resize(cut - 1);
  }
  return text;
}

std::shared_ptr<const base::AnswerPattern> Number() {
  return *base::AnswerPattern::Compile(R"(-?\d+)");
}

TEST(TraceChoice, StepMarginIsTopOneMinusTopTwoProbability) {
  arbor::v1::StepResult step;
  auto add = [&step](int32_t id, double p) {
    arbor::v1::TokenLogprob* t = step.add_top_k();
    t->set_token_id(id);
    t->set_logprob(static_cast<float>(std::log(p)));
  };
  EXPECT_EQ(StepMargin(step), 0.0f) << "no top-K, no confidence";
  add(3, 0.2);
  EXPECT_NEAR(StepMargin(step), 0.2, 1e-6) << "one candidate: its probability";
  add(4, 0.7);  // Out of order on purpose.
  add(5, 0.1);
  EXPECT_NEAR(StepMargin(step), 0.5, 1e-6);
}

TEST(TraceChoice, AnswerSpanCoversTheTokensOfTheLastMatch) {
  // "The answer is 42." with the answer split over " 4" and "2".
  const std::vector<int32_t> tokens = {0, 1, 2, 3, 4, 5};
  const std::vector<float> margins = {0.9f, 0.8f, 0.7f, 0.2f, 0.4f, 0.99f};
  const auto pattern = Number();
  const TraceJudgement j = JudgeTrace(tokens, margins, true, Decode, pattern.get());
  ASSERT_TRUE(j.answer.has_value());
  EXPECT_EQ(*j.answer, "42");
  EXPECT_EQ(j.answer_tokens, 2);
  EXPECT_NEAR(j.confidence, (0.2 + 0.4) / 2, 1e-6) << "only the answer's tokens count";
  // The last match wins: " 7" after a newline.
  const std::vector<int32_t> two = {3, 4, 6, 7};
  const TraceJudgement last = JudgeTrace(two, {0.1f, 0.1f, 0.5f, 0.6f}, true, Decode, pattern.get());
  EXPECT_EQ(last.answer, "7");
  EXPECT_NEAR(last.confidence, 0.6, 1e-6);
}

TEST(TraceChoice, SpanAcrossASplitCharacterAndWithoutAPattern) {
  // " x" then "é" in two byte tokens: the answer "é" spans both, though the decoder shows
  // nothing of the first until the second completes it.
  const std::vector<int32_t> tokens = {10, 8, 9};
  const std::vector<float> margins = {0.1f, 0.3f, 0.5f};
  const auto letters = *base::AnswerPattern::Compile("(\xC3\xA9)");
  const TraceJudgement j = JudgeTrace(tokens, margins, true, Decode, letters.get());
  EXPECT_EQ(j.answer, "\xC3\xA9");
  EXPECT_EQ(j.answer_tokens, 2);
  EXPECT_NEAR(j.confidence, 0.4, 1e-6);
  // No pattern: the whole trace, trimmed, over every token.
  const TraceJudgement whole = JudgeTrace(tokens, margins, true, Decode, nullptr);
  EXPECT_EQ(whole.answer, "x\xC3\xA9");
  EXPECT_NEAR(whole.confidence, 0.3, 1e-6);
  // A pattern that finds nothing: no answer, the whole trace's confidence.
  const TraceJudgement none = JudgeTrace({0, 1}, {0.2f, 0.4f}, true, Decode, Number().get());
  EXPECT_FALSE(none.answer.has_value());
  EXPECT_NEAR(none.confidence, 0.3, 1e-6);
}

TraceJudgement Answer(std::string answer, double confidence) {
  TraceJudgement j;
  j.answer = std::move(answer);
  j.confidence = confidence;
  return j;
}

TEST(TraceChoice, AggregationSumsPerAnswerAndIndividualRankingDoesNot) {
  // "7" is the single most confident trace; "12" wins on the sum 0.5 + 0.45 = 0.95 > 0.8.
  const std::vector<TraceJudgement> traces = {Answer("12", 0.5), Answer("7", 0.8),
                                              Answer("12", 0.45), TraceJudgement{}};
  const TraceRanking summed = RankTraces(traces, /*aggregate=*/true);
  EXPECT_THAT(summed.order, ::testing::ElementsAre(0, 2, 1, 3));
  EXPECT_NEAR(summed.support[0], 0.95, 1e-9);
  EXPECT_NEAR(summed.support[2], 0.95, 1e-9);
  EXPECT_THAT(summed.reason, ::testing::HasSubstr("«12» from 2 of 4 traces"));
  EXPECT_THAT(summed.reason, ::testing::HasSubstr("next: «7», 0.800"));
  const TraceRanking single = RankTraces(traces, /*aggregate=*/false);
  EXPECT_THAT(single.order, ::testing::ElementsAre(1, 0, 2, 3));
  EXPECT_THAT(single.reason, ::testing::HasSubstr("answer «7», margin 0.800"));
}

TEST(TraceChoice, FinishedAnswersOutrankCutOffOnes) {
  // The cut-off trace is the most confident and its answer the best supported, but what a trace
  // said when the token limit cut it may not be its answer.
  TraceJudgement cut = Answer("st", 0.9);
  cut.finished = false;
  const std::vector<TraceJudgement> traces = {cut, Answer("C", 0.3), cut};
  const TraceRanking ranking = RankTraces(traces, true);
  EXPECT_EQ(ranking.order.front(), 1);
  EXPECT_NEAR(ranking.support[0], 1.8, 1e-9) << "cut-off traces sum among themselves";
  EXPECT_NEAR(ranking.support[1], 0.3, 1e-9);
  EXPECT_THAT(TraceNote(cut), ::testing::EndsWith("· cut off"));
  const TraceRanking only_cut = RankTraces(std::vector<TraceJudgement>{cut}, true);
  EXPECT_THAT(only_cut.reason, ::testing::HasSubstr("no trace with an answer finished"));
}

TEST(TraceChoice, TiesKeepTraceOrderAndUnansweredTracesRankByConfidence) {
  const std::vector<TraceJudgement> tie = {Answer("1", 0.5), Answer("2", 0.5)};
  EXPECT_EQ(RankTraces(tie, true).order.front(), 0);
  TraceJudgement low, high;
  low.confidence = 0.1;
  high.confidence = 0.7;
  const TraceRanking none = RankTraces(std::vector<TraceJudgement>{low, high}, true);
  EXPECT_EQ(none.order.front(), 1);
  EXPECT_THAT(none.reason, ::testing::HasSubstr("no trace matched"));
  EXPECT_EQ(TraceNote(Answer("42", 0.25)), "answer «42» · margin 0.250");
  EXPECT_EQ(TraceNote(low), "no answer · margin 0.100");
}

}  // namespace
}  // namespace arbor::coordinator
