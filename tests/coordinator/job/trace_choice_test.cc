// TRACE mode's arithmetic on hand-built traces with known margins: a step's margin and token
// confidence, the answer span mapped back to tokens (multi-token answers, a character split
// across tokens, no match), the ranking with and without aggregation, DeepConf's group-confidence
// vote (stopped and filtered traces left out) and its warm-up threshold, the outrank stop's
// reachable confidence and distinct openings, against values worked out by hand.
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

// Certainties with the given margins (confidence 0).
std::vector<TokenCertainty> Margins(std::vector<float> margins) {
  std::vector<TokenCertainty> certainties;
  for (float m : margins) certainties.push_back({m, 0.0f});
  return certainties;
}

constexpr int32_t kWindow = 16;

TEST(TraceChoice, StepCertaintyIsTheMarginAndTheMeanNegativeTopLogprob) {
  arbor::v1::StepResult step;
  auto add = [&step](int32_t id, double p) {
    arbor::v1::TokenLogprob* t = step.add_top_k();
    t->set_token_id(id);
    t->set_logprob(static_cast<float>(std::log(p)));
  };
  EXPECT_EQ(StepCertainty(step).margin, 0.0f) << "no top-K, no confidence";
  EXPECT_EQ(StepCertainty(step).confidence, 0.0f);
  add(3, 0.2);
  EXPECT_NEAR(StepCertainty(step).margin, 0.2, 1e-6) << "one candidate: its probability";
  add(4, 0.7);  // Out of order on purpose.
  add(5, 0.1);
  EXPECT_NEAR(StepCertainty(step).margin, 0.5, 1e-6);
  EXPECT_NEAR(StepCertainty(step).confidence, -(std::log(0.7) + std::log(0.2) + std::log(0.1)) / 3,
              1e-6);
  // Only the 20 most likely count.
  for (int i = 0; i < 30; ++i) add(10 + i, 1e-6);
  double sum = -(std::log(0.7) + std::log(0.2) + std::log(0.1));
  for (int i = 0; i < 17; ++i) sum -= std::log(1e-6);
  EXPECT_NEAR(StepCertainty(step).confidence, sum / 20, 1e-4);
}

TEST(TraceChoice, GroupConfidenceIsTheLowestWindowMean) {
  const std::vector<int32_t> tokens = {0, 1, 2, 3, 4, 5};
  std::vector<TokenCertainty> c;
  for (float x : {8.0f, 6.0f, 2.0f, 4.0f, 9.0f, 9.0f}) c.push_back({0.5f, x});
  // Windows of 3: 16/3, 4, 5, 22/3 -> 4.
  EXPECT_NEAR(JudgeTrace(tokens, c, true, 3, Decode, nullptr).group_confidence, 4.0, 1e-6);
  // A trace shorter than the window is judged whole.
  EXPECT_NEAR(JudgeTrace(tokens, c, true, 16, Decode, nullptr).group_confidence, 38.0 / 6, 1e-6);
}

TEST(TraceChoice, AnswerSpanCoversTheTokensOfTheLastMatch) {
  // "The answer is 42." with the answer split over " 4" and "2".
  const std::vector<int32_t> tokens = {0, 1, 2, 3, 4, 5};
  const std::vector<TokenCertainty> margins = Margins({0.9f, 0.8f, 0.7f, 0.2f, 0.4f, 0.99f});
  const auto pattern = Number();
  const TraceJudgement j = JudgeTrace(tokens, margins, true, kWindow, Decode, pattern.get());
  ASSERT_TRUE(j.answer.has_value());
  EXPECT_EQ(*j.answer, "42");
  EXPECT_EQ(j.answer_tokens, 2);
  EXPECT_NEAR(j.confidence, (0.2 + 0.4) / 2, 1e-6) << "only the answer's tokens count";
  // The last match wins: " 7" after a newline.
  const std::vector<int32_t> two = {3, 4, 6, 7};
  const TraceJudgement last =
      JudgeTrace(two, Margins({0.1f, 0.1f, 0.5f, 0.6f}), true, kWindow, Decode, pattern.get());
  EXPECT_EQ(last.answer, "7");
  EXPECT_NEAR(last.confidence, 0.6, 1e-6);
}

TEST(TraceChoice, SpanAcrossASplitCharacterAndWithoutAPattern) {
  // " x" then "é" in two byte tokens: the answer "é" spans both, though the decoder shows
  // nothing of the first until the second completes it.
  const std::vector<int32_t> tokens = {10, 8, 9};
  const std::vector<TokenCertainty> margins = Margins({0.1f, 0.3f, 0.5f});
  const auto letters = *base::AnswerPattern::Compile("(\xC3\xA9)");
  const TraceJudgement j = JudgeTrace(tokens, margins, true, kWindow, Decode, letters.get());
  EXPECT_EQ(j.answer, "\xC3\xA9");
  EXPECT_EQ(j.answer_tokens, 2);
  EXPECT_NEAR(j.confidence, 0.4, 1e-6);
  // No pattern: the whole trace, trimmed, over every token.
  const TraceJudgement whole = JudgeTrace(tokens, margins, true, kWindow, Decode, nullptr);
  EXPECT_EQ(whole.answer, "x\xC3\xA9");
  EXPECT_NEAR(whole.confidence, 0.3, 1e-6);
  // A pattern that finds nothing: no answer, the whole trace's confidence.
  const TraceJudgement none =
      JudgeTrace({0, 1}, Margins({0.2f, 0.4f}), true, kWindow, Decode, Number().get());
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
  const TraceRanking summed = RankTraces(traces, {.aggregate = true});
  EXPECT_THAT(summed.order, ::testing::ElementsAre(0, 2, 1, 3));
  EXPECT_NEAR(summed.support[0], 0.95, 1e-9);
  EXPECT_NEAR(summed.support[2], 0.95, 1e-9);
  EXPECT_THAT(summed.reason, ::testing::HasSubstr("«12» from 2 of 4 traces"));
  EXPECT_THAT(summed.reason, ::testing::HasSubstr("next: «7», 0.800"));
  const TraceRanking single = RankTraces(traces, {.aggregate = false});
  EXPECT_THAT(single.order, ::testing::ElementsAre(1, 0, 2, 3));
  EXPECT_THAT(single.reason, ::testing::HasSubstr("answer «7», margin 0.800"));
}

TEST(TraceChoice, FinishedAnswersOutrankCutOffOnes) {
  // The cut-off trace is the most confident and its answer the best supported, but what a trace
  // said when the token limit cut it may not be its answer.
  TraceJudgement cut = Answer("st", 0.9);
  cut.finished = false;
  const std::vector<TraceJudgement> traces = {cut, Answer("C", 0.3), cut};
  const TraceRanking ranking = RankTraces(traces, {});
  EXPECT_EQ(ranking.order.front(), 1);
  EXPECT_NEAR(ranking.support[0], 1.8, 1e-9) << "cut-off traces sum among themselves";
  EXPECT_NEAR(ranking.support[1], 0.3, 1e-9);
  EXPECT_THAT(TraceNote(traces, ranking, 0, entropix::TraceVote::kMargin),
              ::testing::EndsWith("· cut off"));
  const TraceRanking only_cut = RankTraces(std::vector<TraceJudgement>{cut}, {});
  EXPECT_THAT(only_cut.reason, ::testing::HasSubstr("no trace with an answer finished"));
}

TEST(TraceChoice, TiesKeepTraceOrderAndUnansweredTracesRankByConfidence) {
  const std::vector<TraceJudgement> tie = {Answer("1", 0.5), Answer("2", 0.5)};
  EXPECT_EQ(RankTraces(tie, {}).order.front(), 0);
  TraceJudgement low, high;
  low.confidence = 0.1;
  high.confidence = 0.7;
  const TraceRanking none = RankTraces(std::vector<TraceJudgement>{low, high}, {});
  EXPECT_EQ(none.order.front(), 1);
  EXPECT_THAT(none.reason, ::testing::HasSubstr("no trace matched"));
  const std::vector<TraceJudgement> notes = {Answer("42", 0.25), low};
  const TraceRanking noted = RankTraces(notes, {});
  EXPECT_EQ(TraceNote(notes, noted, 0, entropix::TraceVote::kMargin), "answer «42» · margin 0.250");
  EXPECT_EQ(TraceNote(notes, noted, 1, entropix::TraceVote::kMargin), "no answer · margin 0.100");
}

TraceJudgement Confident(std::string answer, double group_confidence, bool stopped = false) {
  TraceJudgement j = Answer(std::move(answer), 0.5);
  j.group_confidence = group_confidence;
  j.stopped = stopped;
  return j;
}

TEST(TraceChoice, DeepConfVotesByGroupConfidenceWithoutStoppedOrFilteredTraces) {
  // "3" has the most votes, but one of its traces stopped early and one is not among the most
  // confident half: "5" wins on 9 + 8 = 17 against "3"'s 10.
  const std::vector<TraceJudgement> traces = {
      Confident("3", 10.0), Confident("5", 9.0),        Confident("3", 12.0, /*stopped=*/true),
      Confident("5", 8.0),  Confident("3", 2.0),        Confident("7", 1.0),
      Confident("3", 3.0),  Confident("9", 0.5)};
  const TraceVoteOptions deepconf{.aggregate = true,
                                  .vote = entropix::TraceVote::kGroupConfidence,
                                  .keep_fraction = 0.5f};
  const TraceRanking ranking = RankTraces(traces, deepconf);
  // 7 eligible, ceil(3.5) = 4 vote: 10, 9, 8, 3.
  EXPECT_THAT(ranking.voted, ::testing::ElementsAre(true, true, false, true, false, false, true,
                                                    false));
  EXPECT_EQ(traces[ranking.order.front()].answer, "5");
  EXPECT_NEAR(ranking.support[1], 17.0, 1e-9);
  EXPECT_NEAR(ranking.support[0], 13.0, 1e-9) << "10 + 3: the voting traces of «3»";
  EXPECT_THAT(ranking.reason, ::testing::HasSubstr("summed confidence 17.000"));
  EXPECT_THAT(ranking.reason, ::testing::HasSubstr("4 traces left out of the vote"));
  EXPECT_THAT(TraceNote(traces, ranking, 2, deepconf.vote),
              ::testing::EndsWith("· stopped: confidence fell"));
  EXPECT_THAT(TraceNote(traces, ranking, 4, deepconf.vote),
              ::testing::EndsWith("· not among the most confident"));
  // Every eligible trace votes at keep_fraction 1; stopped traces never do.
  const TraceRanking all =
      RankTraces(traces, {.vote = entropix::TraceVote::kGroupConfidence, .keep_fraction = 1.0f});
  EXPECT_EQ(std::count(all.voted.begin(), all.voted.end(), true), 7);
  EXPECT_NEAR(all.support[0], 15.0, 1e-9) << "10 + 2 + 3";
  EXPECT_EQ(traces[all.order.front()].answer, "5");
}

TEST(TraceChoice, WarmupThresholdIsTheQuantileThatKeepsTheFraction) {
  const std::vector<double> lowest = {4.0, 1.0, 3.0, 2.0, 5.0};
  EXPECT_NEAR(WarmupThreshold(lowest, 1.0f), 1.0, 1e-9) << "keep all: the least confident";
  EXPECT_NEAR(WarmupThreshold(lowest, 0.5f), 3.0, 1e-9) << "the median";
  EXPECT_NEAR(WarmupThreshold(lowest, 0.1f), 4.6, 1e-6) << "keep 10 %: the 90th percentile";
  EXPECT_NEAR(WarmupThreshold({7.0}, 0.1f), 7.0, 1e-9);
}

// The outrank stop's bound: margins of 1 for every token left, over the longest trace.
TEST(TraceChoice, ReachableConfidenceAssumesPerfectMarginsToTheLimit) {
  const std::vector<TokenCertainty> path = {{0.5f, 0.0f}, {0.25f, 0.0f}};
  EXPECT_DOUBLE_EQ(ReachableConfidence(path, 2), 0.375) << "at the limit: its own mean";
  EXPECT_DOUBLE_EQ(ReachableConfidence(path, 4), (0.75 + 2.0) / 4.0);
  EXPECT_DOUBLE_EQ(ReachableConfidence({}, 4), 1.0);
  // Any ending at or before the limit scores at most the bound.
  for (int length = 2; length <= 4; ++length) {
    EXPECT_LE((0.75 + (length - 2)) / length, ReachableConfidence(path, 4) + 1e-12) << length;
  }
}

TEST(TraceChoice, AnswersStayDistinctUnlessAnOpeningCouldGrowIntoAnother) {
  EXPECT_TRUE(AnswersStayDistinct({"The", "A", "Sure"}));
  EXPECT_TRUE(AnswersStayDistinct({"Yes", "No"}));
  EXPECT_FALSE(AnswersStayDistinct({"The", "Th"})) << "\"Th\" + \"e\" is \"The\"";
  EXPECT_FALSE(AnswersStayDistinct({" The", "The"})) << "the answer's whitespace is stripped";
  EXPECT_FALSE(AnswersStayDistinct({"Yes\n", "Yes "})) << "both may end as \"Yes\"";
  EXPECT_FALSE(AnswersStayDistinct({"\n", "Sure"})) << "whitespace alone opens anything";
  EXPECT_FALSE(AnswersStayDistinct({"", "A"})) << "a held-back byte opens anything";
}

}  // namespace
}  // namespace arbor::coordinator
