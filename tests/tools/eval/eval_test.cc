// The pure parts of `arbor eval` and `arbor calibrate`: task lines (Arbor and GSM8K formats,
// errors naming line and field), answer extraction and matching, strategy lists, the results
// log (resume, torn last line), the report's aggregation on a hand-computed case, and
// calibration's quantiles on a synthetic metric stream.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "tools/eval/calibration.h"
#include "tools/eval/eval_report.h"
#include "tools/eval/eval_runner.h"
#include "tools/eval/results_log.h"
#include "tools/eval/strategies.h"
#include "tools/eval/task_file.h"
#include "tools/eval/task_prompt.h"

namespace arbor::tools::eval {
namespace {

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/eval-test-", getpid(), "-", name);
}

Task Parse(const std::string& line) {
  absl::StatusOr<Task> task = ParseTask(line, "t.jsonl:1");
  EXPECT_TRUE(task.ok()) << task.status();
  return task.ok() ? *task : Task();
}

void ExpectBad(const std::string& line, const std::string& needle) {
  absl::StatusOr<Task> task = ParseTask(line, "t.jsonl:7");
  ASSERT_FALSE(task.ok()) << line;
  EXPECT_EQ(task.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(task.status().message().find(needle), std::string::npos) << task.status();
  EXPECT_NE(task.status().message().find("t.jsonl:7"), std::string::npos) << task.status();
}

TEST(TaskFileTest, ParsesBothFormats) {
  const Task chat = Parse(
      R"({"id":"a","messages":[{"role":"user","content":"2+2?"}],"answer":"4","match":"number",)"
      R"("family":"arithmetic","level":2,"max_tokens":8})");
  EXPECT_EQ(chat.id, "a");
  ASSERT_EQ(chat.messages.size(), 1u);
  EXPECT_EQ(chat.match, MatchKind::kNumber);
  EXPECT_EQ(chat.level, 2);
  EXPECT_EQ(chat.max_tokens, 8);
  arbor::v1::GenerateRequest request;
  SetPrompt(chat, request);
  EXPECT_TRUE(request.chat().add_generation_prompt());

  const Task gsm8k =
      Parse(R"({"question":"Tom has 3 apples and buys 4. How many?","answer":"3+4=7\n#### 7"})");
  EXPECT_EQ(gsm8k.answer, "7");
  EXPECT_EQ(gsm8k.match, MatchKind::kNumber);
  EXPECT_EQ(gsm8k.family, "gsm8k");

  const Task choice =
      Parse(R"({"id":"c","prompt":"Sky colour:","answer":"blue","choices":["red","blue"]})");
  EXPECT_EQ(choice.choices.size(), 2u);
  arbor::v1::ScoreRequest score;
  SetPrompt(choice, score);
  EXPECT_EQ(score.text(), "Sky colour:");
}

TEST(TaskFileTest, ErrorsNameLineAndField) {
  ExpectBad("not json", "line");
  ExpectBad(R"({"prompt":"x","answer":"1"})", "id");
  ExpectBad(R"({"id":"a","answer":"1"})", "prompt");
  ExpectBad(R"({"id":"a","prompt":"x","messages":[],"answer":"1"})", "prompt");
  ExpectBad(R"({"id":"a","prompt":"x","answer":"1","match":"fuzzy"})", "match");
  ExpectBad(R"({"id":"a","prompt":"x","answer":"1","extract":"("})", "extract");
  ExpectBad(R"({"id":"a","prompt":"x","answer":"z","choices":["x","y"]})", "answer");
  ExpectBad(R"({"id":"a","prompt":"x","answer":"1","max_tokens":0})", "max_tokens");
  ExpectBad(R"({"id":"a","messages":[{"role":"user"}],"answer":"1"})", "messages[0]");

  const std::string path = TempPath("dup.jsonl");
  std::ofstream(path) << R"({"id":"a","prompt":"x","answer":"1"})"
                      << "\n\n"
                      << R"({"id":"a","prompt":"y","answer":"2"})"
                      << "\n";
  absl::StatusOr<std::vector<Task>> tasks = ReadTasks({path});
  ASSERT_FALSE(tasks.ok());
  EXPECT_NE(tasks.status().message().find(":3: id"), std::string::npos) << tasks.status();
  EXPECT_EQ(ReadTasks({TempPath("missing")}).status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST(TaskFileTest, ExtractionAndMatching) {
  Task number;
  number.match = MatchKind::kNumber;
  number.answer = "1,234";
  EXPECT_EQ(ExtractAnswer(number, "First 12, then 1,234."), "1,234");
  EXPECT_TRUE(AnswerMatches(number, "1234"));
  EXPECT_TRUE(AnswerMatches(number, "1234.0"));
  EXPECT_FALSE(AnswerMatches(number, "1235"));
  EXPECT_FALSE(AnswerMatches(number, ""));
  EXPECT_FALSE(AnswerMatches(number, "12a"));

  Task word;
  word.match = MatchKind::kIcase;
  word.answer = "Paris";
  EXPECT_EQ(ExtractAnswer(word, "\n  paris \nbecause"), "paris");
  EXPECT_TRUE(AnswerMatches(word, "PARIS"));
  word.match = MatchKind::kExact;
  EXPECT_FALSE(AnswerMatches(word, "paris"));

  Task grouped =
      Parse(R"json({"id":"g","prompt":"x","answer":"b","extract":"answer: (\\w+)"})json");
  EXPECT_EQ(ExtractAnswer(grouped, "answer: a ... answer: b"), "b");
  EXPECT_EQ(ExtractAnswer(grouped, "no answer here"), "");
}

// Each strategy list is refused with a message holding its needle.
void ExpectRefused(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [list, needle] : cases) {
    absl::StatusOr<std::vector<Strategy>> bad = ParseStrategies(list);
    ASSERT_FALSE(bad.ok()) << list;
    EXPECT_NE(bad.status().message().find(needle), std::string::npos) << bad.status();
  }
}

TEST(StrategiesTest, ParsesKindsOptionsAndErrors) {
  absl::StatusOr<std::vector<Strategy>> parsed = ParseStrategies(
      "greedy,sample:temperature=0.9,best_of_n:n=3,self_consistency,search:width=3:label=s3");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 5u);
  EXPECT_TRUE((*parsed)[0].deterministic());
  EXPECT_EQ((*parsed)[0].policy.thresholds().lelv_entropy(), 64);
  EXPECT_FLOAT_EQ((*parsed)[1].policy.sampling().temperature(), 0.9f);
  EXPECT_EQ((*parsed)[1].policy.coefficients().ada_temp_logits(), 0);
  EXPECT_EQ((*parsed)[2].samples, 3);
  EXPECT_EQ((*parsed)[3].samples, 5);
  EXPECT_EQ((*parsed)[4].label, "s3");
  EXPECT_EQ((*parsed)[4].policy.branch().width(), 3);
  EXPECT_EQ((*parsed)[4].policy.mode(), arbor::v1::POLICY_MODE_SEARCH);

  ExpectRefused({{"beam", "'beam'"},
                 {"greedy:n=3", "n"},
                 {"sample:temperature=hot", "temperature"},
                 {"search:width=1", "width"},
                 {"sample,sample", "twice"},
                 {"search:policy_file=/nonexistent.json", "/nonexistent.json"},
                 {"", "empty"}});
}

// Every option of the trace strategies and of search lands in its policy field; an option
// another kind owns, or an integer out of range, is refused.
TEST(StrategiesTest, TraceAndSearchOptionsSetTheirFields) {
  absl::StatusOr<std::vector<Strategy>> parsed = ParseStrategies(
      "cot_decoding:k=5:candidate_min_p=0.2:traces=7:aggregate=0,"
      "eager:theta=2.5:depth=3,"
      "deepconf:k=6:temperature=0.4:warmup=3:keep=0.75:window=12,"
      "search:width=4:max_len=9:temperature=0.7:min_p=0.1:top_p=0.9:top_k=40");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const arbor::v1::TraceOptions& cot = (*parsed)[0].policy.trace();
  EXPECT_EQ(cot.width(), 5);
  EXPECT_FLOAT_EQ(cot.candidate_min_p(), 0.2f);
  EXPECT_EQ(cot.max_traces(), 7);
  EXPECT_FALSE(cot.aggregate());
  const arbor::v1::TraceOptions& eager = (*parsed)[1].policy.trace();
  EXPECT_FLOAT_EQ(eager.fork_entropy(), 2.5f);
  EXPECT_EQ(eager.max_depth(), 3);
  const arbor::v1::PolicyConfig& deepconf = (*parsed)[2].policy;
  EXPECT_EQ(deepconf.trace().width(), 6);
  EXPECT_EQ(deepconf.trace().max_traces(), 6);  // Room for every trace of the one fork.
  EXPECT_FLOAT_EQ(deepconf.trace().temperature(), 0.4f);
  EXPECT_FALSE(deepconf.sampling().has_temperature());  // DeepConf's own, not the sampler's.
  EXPECT_EQ(deepconf.trace().warmup_traces(), 3);
  EXPECT_FLOAT_EQ(deepconf.trace().keep_fraction(), 0.75f);
  EXPECT_EQ(deepconf.trace().confidence_window(), 12);
  const arbor::v1::PolicyConfig& search = (*parsed)[3].policy;
  EXPECT_EQ(search.branch().width(), 4);
  EXPECT_EQ(search.branch().max_len(), 9);
  EXPECT_FLOAT_EQ(search.sampling().temperature(), 0.7f);
  EXPECT_FLOAT_EQ(search.sampling().min_p(), 0.1f);
  EXPECT_FLOAT_EQ(search.sampling().top_p(), 0.9f);
  EXPECT_EQ(search.sampling().top_k(), 40);

  ExpectRefused({{"deepconf:depth=2", "not an option"},
                 {"cot_decoding:warmup=1", "not an option"},
                 {"eager:depth=9", "[1, 8]"},
                 {"deepconf:window=0", "[1, 4096]"},
                 {"cot_decoding:aggregate=2", "[0, 1]"},
                 {"eager:theta=high", "not a number"}});
}

Outcome MakeOutcome(const std::string& item, const std::string& strategy, uint64_t seed,
                    bool correct, int64_t tokens) {
  Outcome o;
  o.item = item;
  o.strategy = strategy;
  o.seed = seed;
  o.family = std::string(1, 'f');  // Not = "f": GCC 12 -Wrestrict false positive (bug 105329).
  o.correct = correct;
  o.generated_tokens = tokens;
  return o;
}

TEST(ResultsLogTest, ResumesAndDropsATornLastLine) {
  const std::string path = TempPath("results.jsonl");
  std::remove(path.c_str());
  {
    absl::StatusOr<std::unique_ptr<ResultsLog>> log = ResultsLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->Append(MakeOutcome("a", "greedy", 0, true, 5)).ok());
    ASSERT_TRUE((*log)->Append(MakeOutcome("b", "greedy", 0, false, 7)).ok());
  }
  std::ofstream(path, std::ios::app) << R"({"item":"c","strat)";  // Killed mid-write.
  {
    absl::StatusOr<std::unique_ptr<ResultsLog>> log = ResultsLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status();
    EXPECT_EQ((*log)->outcomes().size(), 2u);
    EXPECT_TRUE((*log)->Has(MakeOutcome("b", "greedy", 0, false, 0).Key()));
    EXPECT_FALSE((*log)->Has(MakeOutcome("c", "greedy", 0, false, 0).Key()));
    ASSERT_TRUE((*log)->Append(MakeOutcome("c", "greedy", 0, true, 1)).ok());
  }
  absl::StatusOr<std::unique_ptr<ResultsLog>> reread = ResultsLog::Open(path);
  ASSERT_TRUE(reread.ok()) << reread.status();
  ASSERT_EQ((*reread)->outcomes().size(), 3u);
  EXPECT_EQ((*reread)->outcomes()[2].item, "c");
  EXPECT_EQ((*reread)->outcomes()[1].generated_tokens, 7);
  reread->reset();
  // A malformed line that is not the last is an error, not silently skipped.
  std::ofstream(path, std::ios::trunc) << "garbage\n"
                                       << R"({"item":"a"})"
                                       << "\n";
  EXPECT_FALSE(ResultsLog::Open(path).ok());
  std::remove(path.c_str());
}

// The report of HandComputedAccuraciesAndPairing: greedy's intervals are Wilson's, checked
// against reference values (statsmodels' proportion_confint(k, n, method="wilson")); sample's
// per-family Student-t intervals (two items each) reach far past [0, 1] and are clipped.
void ExpectIntervalsNamedAndInsideTheUnitInterval(const EvalReport& report) {
  const StrategyReport& g = report.strategies[0];
  const StrategyReport& s = report.strategies[1];
  EXPECT_EQ(g.accuracy_method, kWilson);
  EXPECT_EQ(s.accuracy_method, kClippedT);
  EXPECT_NEAR(g.accuracy.lo, 0.15004, 1e-5);  // 2 of 4.
  EXPECT_NEAR(g.accuracy.hi, 0.84996, 1e-5);
  EXPECT_NEAR(g.by_family.at("x").lo, 0.34238, 1e-5);  // 2 of 2.
  EXPECT_DOUBLE_EQ(g.by_family.at("x").hi, 1.0);
  EXPECT_DOUBLE_EQ(g.by_family.at("y").lo, 0.0);  // 0 of 2.
  EXPECT_NEAR(g.by_family.at("y").hi, 0.65762, 1e-5);
  // Family x's item scores 1 and 0.5: mean 0.75 ± 12.706 · 0.354 / √2 = [-2.43, 3.93].
  EXPECT_DOUBLE_EQ(s.by_family.at("x").lo, 0.0);
  EXPECT_DOUBLE_EQ(s.by_family.at("x").hi, 1.0);
  const nlohmann::json json = ReportJson(report);
  EXPECT_EQ(json["strategies"][0]["accuracy_interval"], "wilson");
  EXPECT_EQ(json["strategies"][1]["accuracy_interval"], "student_t_clipped");
  for (const nlohmann::json& strategy : json["strategies"]) {
    for (const auto& [family, interval] : strategy["by_family"].items()) {
      EXPECT_GE(interval["lo"].get<double>(), 0.0) << family;
      EXPECT_LE(interval["hi"].get<double>(), 1.0) << family;
    }
  }
  EXPECT_NE(ReportTable(report).find("wilson with one answer per item"), std::string::npos);
}

TEST(EvalReportTest, HandComputedAccuraciesAndPairing) {
  // Four items; greedy right on items 0 and 1; sample (2 seeds) right on 0 (both seeds),
  // 1 (seed 1), 2 (both), 3 (none): item scores 1, 0.5, 1, 0 → accuracy 0.625 vs 0.5.
  std::vector<Task> tasks(4);
  for (int i = 0; i < 4; ++i) {
    tasks[i].id = absl::StrCat("i", i);
    tasks[i].family = i < 2 ? "x" : "y";
  }
  absl::StatusOr<std::vector<Strategy>> strategies = ParseStrategies("greedy,sample");
  ASSERT_TRUE(strategies.ok());
  std::vector<Outcome> outcomes;
  const bool greedy[] = {true, true, false, false};
  const bool sample[4][2] = {{true, true}, {true, false}, {true, true}, {false, false}};
  for (int i = 0; i < 4; ++i) {
    outcomes.push_back(MakeOutcome(tasks[i].id, "greedy", 0, greedy[i], 10));
    for (int s = 0; s < 2; ++s) {
      outcomes.push_back(MakeOutcome(tasks[i].id, "sample", s + 1, sample[i][s], 20));
    }
  }
  // An item missing one answer is left out of every strategy.
  tasks.push_back(Task());
  tasks.back().id = "partial";
  outcomes.push_back(MakeOutcome("partial", "greedy", 0, true, 10));

  const EvalReport report = BuildReport(tasks, *strategies, {1, 2}, outcomes);
  EXPECT_EQ(report.generation_items, 4);
  EXPECT_EQ(report.generation_items_total, 5);
  EXPECT_EQ(report.baseline, "greedy");
  ASSERT_EQ(report.strategies.size(), 2u);
  const StrategyReport& g = report.strategies[0];
  const StrategyReport& s = report.strategies[1];
  EXPECT_DOUBLE_EQ(g.accuracy.estimate, 0.5);
  EXPECT_DOUBLE_EQ(s.accuracy.estimate, 0.625);
  EXPECT_EQ(s.seed_accuracy, (std::vector<double>{0.75, 0.5}));
  EXPECT_DOUBLE_EQ(s.generated_tokens, 20);
  ASSERT_TRUE(s.vs_baseline.has_value());
  EXPECT_DOUBLE_EQ(s.vs_baseline->mean, 0.125);
  // First seed: sample right where greedy is wrong on item 2 only; never the reverse.
  EXPECT_EQ(s.mcnemar_better, 1);
  EXPECT_EQ(s.mcnemar_worse, 0);
  EXPECT_DOUBLE_EQ(s.mcnemar_p, 1.0);
  EXPECT_DOUBLE_EQ(s.by_family.at("x").estimate, 0.75);
  EXPECT_DOUBLE_EQ(s.by_family.at("y").estimate, 0.5);
  ExpectIntervalsNamedAndInsideTheUnitInterval(report);
  EXPECT_NE(ReportTable(report).find("0.625"), std::string::npos);
  EXPECT_EQ(ReportJson(report)["strategies"][1]["vs_baseline"]["mcnemar_better"], 1);
  const std::string plot = TempPath("plot.png");
  EXPECT_TRUE(WriteReportPlot(report, plot).ok());
  std::remove(plot.c_str());
}

TEST(PendingUnitsTest, DeterministicOnceLoglikOnceSkipsDone) {
  std::vector<Task> tasks(2);
  tasks[0].id = "gen";
  tasks[1].id = "mc";
  tasks[1].choices = {"a", "b"};
  tasks[1].answer = "a";
  absl::StatusOr<std::vector<Strategy>> strategies = ParseStrategies("greedy,sample");
  const std::string path = TempPath("pending.jsonl");
  std::remove(path.c_str());
  absl::StatusOr<std::unique_ptr<ResultsLog>> log = ResultsLog::Open(path);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(PendingUnits(tasks, *strategies, {1, 2, 3}, **log).size(), 1u + 3u + 1u);
  ASSERT_TRUE((*log)->Append(MakeOutcome("gen", "sample", 2, true, 1)).ok());
  EXPECT_EQ(PendingUnits(tasks, *strategies, {1, 2, 3}, **log).size(), 4u);
  std::remove(path.c_str());
}

// Every (item, seed, sample) gets its own server seed, so items sharing a prompt length do not
// share their draws; and the value is pinned, so a resumed run on another build draws the same.
TEST(SamplerSeedTest, DistinctPerItemSeedAndSampleAndStable) {
  std::set<uint64_t> seen;
  for (int item = 0; item < 500; ++item) {
    for (uint64_t seed : {1, 2, 3}) {
      for (int sample = 0; sample < 4; ++sample) {
        const uint64_t value = SamplerSeed(absl::StrCat("arithmetic-L1-s1-", item), seed, sample);
        EXPECT_NE(value, 0u);
        seen.insert(value);
      }
    }
  }
  EXPECT_EQ(seen.size(), 500u * 3 * 4);
  EXPECT_EQ(SamplerSeed("a", 1, 0), SamplerSeed("a", 1, 0));
  EXPECT_EQ(SamplerSeed("arithmetic-L1-s1-0", 1, 0),
            0xedb9237038950be3ull);  // FNV-1a + SplitMix64.
}

TEST(CalibrationTest, ReproducesKnownQuantilesOfASyntheticStream) {
  // Entropy uniform on [0, 8): quantile q is 8q; varentropy exponential(1): −ln(1 − q).
  MetricSamples samples;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200000; ++i) {
    arbor::v1::Metrics m;
    const double u = (rng() >> 11) * 0x1.0p-53, w = (rng() >> 11) * 0x1.0p-53;
    m.set_entropy(static_cast<float>(8 * u));
    m.set_varentropy(static_cast<float>(-std::log(1 - w)));
    samples.Add(m);
  }
  absl::StatusOr<std::map<std::string, double>> quantiles =
      CalibrationQuantiles("lelv_entropy=0.1,hehv_varentropy=0.99");
  ASSERT_TRUE(quantiles.ok()) << quantiles.status();
  absl::StatusOr<arbor::v1::PolicyConfig> policy = CalibratedPolicy(samples, *quantiles);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const arbor::v1::Thresholds& t = policy->thresholds();
  EXPECT_NEAR(t.lelv_entropy(), 0.8, 0.03);
  EXPECT_NEAR(t.lelv_varentropy(), -std::log(0.75), 0.01);
  EXPECT_NEAR(t.helv_entropy(), 7.6, 0.03);
  EXPECT_NEAR(t.helv_varentropy(), std::log(2.0), 0.01);
  EXPECT_NEAR(t.hehv_varentropy(), -std::log(0.01), 0.05);
  EXPECT_NEAR(policy->branch().calm_entropy(), 4.0, 0.03);
  EXPECT_NEAR(policy->trace().fork_entropy(), 7.2, 0.03) << "EAGer's gate: the 0.9 quantile";

  EXPECT_DOUBLE_EQ(Quantile({3, 1, 2, 4}, 0.5), 2.5);  // Type 7: between the middle two.
  EXPECT_DOUBLE_EQ(Quantile({5}, 0.9), 5);
  EXPECT_FALSE(CalibrationQuantiles("lelv=0.1").ok());
  EXPECT_FALSE(CalibrationQuantiles("lelv_entropy=1.5").ok());
  EXPECT_EQ(CalibratedPolicy(MetricSamples(), *quantiles).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace arbor::tools::eval
