// `arbor eval`, `arbor tasks` and `arbor calibrate` as real processes against a real coordinator
// and worker on a tiny model: an evaluation of a small task file (generation and multiple-choice
// items, every kind of strategy) writes its results, report and plot; an evaluation cut short
// (its results file truncated mid-line, as a kill leaves it) resumes to the same report as the
// uninterrupted run; calibration on text writes a policy file the strategies accept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "grpcpp/grpcpp.h"
#include "model/make_model.h"
#include "nlohmann/json.hpp"
#include "tools/local_cluster.h"

namespace arbor {
namespace {

const std::string kBin = ARBOR_BINARY_DIR "/bin";

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/eval-e2e-", getpid(), "-", name);
}

std::pair<int, std::string> RunToEnd(const std::vector<std::string>& argv) {
  const std::string log = TempPath("out.log");
  absl::StatusOr<base::Subprocess> p = base::Subprocess::Start(argv, log);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return {-1, ""};
  const int code = p->Wait(absl::Seconds(240)).value_or(-1);
  std::string output = base::ReadFile(log).value_or("");
  std::filesystem::remove(log);  // Its text goes back to the test, to show where a check fails.
  return {code, std::move(output)};
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The report without its wall times, which differ between runs.
nlohmann::json Comparable(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json report = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  for (nlohmann::json& s : report["strategies"]) s.erase("wall_s_per_answer");
  return report;
}

class EvalE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempPath("dir"));
    std::filesystem::create_directories(*dir_);
    model::MakeModelOptions options;
    options.out_dir = *dir_ + "/model";
    options.seed = 4;
    ASSERT_TRUE(model::MakeModel(options).ok());
    std::string worker_address;
    absl::StatusOr<base::Subprocess> worker = tools::StartServer(
        {kBin + "/arbor-worker", "--model=" + options.out_dir, "--log_level=warn"}, "127.0.0.1:0",
        *dir_ + "/worker.port", *dir_ + "/worker.log", absl::Seconds(30), &worker_address);
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = new base::Subprocess(*std::move(worker));
    absl::StatusOr<base::Subprocess> coordinator =
        tools::StartServer({kBin + "/arbor-coordinator", "--model=" + options.out_dir,
                            "--workers=" + worker_address, "--log_level=warn"},
                           "127.0.0.1:0", *dir_ + "/coordinator.port", *dir_ + "/coordinator.log",
                           absl::Seconds(30), coordinator_address_ = new std::string());
    ASSERT_TRUE(coordinator.ok()) << coordinator.status();
    coordinator_ = new base::Subprocess(*std::move(coordinator));
    // Static workers are dialled in the background: wait until a job can be routed.
    auto stub = v1::Generation::NewStub(
        grpc::CreateChannel(*coordinator_address_, grpc::InsecureChannelCredentials()));
    for (int i = 0; i < 300; ++i) {
      grpc::ClientContext context;
      v1::GenerateRequest probe;
      probe.mutable_tokens()->add_token_ids(1);
      probe.set_max_tokens(1);
      v1::JobRef ref;
      if (stub->Submit(&context, probe, &ref).ok()) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
    FAIL() << "no worker became ready";
  }
  static void TearDownTestSuite() {
    delete coordinator_;
    delete worker_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete coordinator_address_;
  }

  // Two generated arithmetic items, one raw-text item and one multiple-choice item.
  static std::string WriteTasks() {
    const std::string path = *dir_ + "/tasks.jsonl";
    auto [code, out] = RunToEnd({kBin + "/arbor", "tasks", "--family=arithmetic", "--level=1",
                                 "--count=2", "--seed=9", "--out=" + path});
    EXPECT_EQ(code, 0) << out;
    std::ofstream(path, std::ios::app)
        << R"({"id":"text","prompt":"Count: one two","answer":"three","match":"icase"})"
        << "\n"
        << R"({"id":"mc","prompt":"Pick:","answer":"b","choices":["a","b","c"]})"
        << "\n";
    return path;
  }

  static std::vector<std::string> Eval(const std::string& tasks, const std::string& results) {
    return {kBin + "/arbor",
            "eval",
            "--coordinator=" + *coordinator_address_,
            "--tasks=" + tasks,
            "--strategies=greedy,sample,best_of_n:n=2,self_consistency:n=2,canonical,search",
            "--seeds=1,2",
            "--max_tokens=6",
            "--concurrency=3",
            "--results=" + results};
  }

  static std::string* dir_;
  static std::string* coordinator_address_;
  static base::Subprocess* worker_;
  static base::Subprocess* coordinator_;
};
std::string* EvalE2eTest::dir_ = nullptr;
std::string* EvalE2eTest::coordinator_address_ = nullptr;
base::Subprocess* EvalE2eTest::worker_ = nullptr;
base::Subprocess* EvalE2eTest::coordinator_ = nullptr;

TEST_F(EvalE2eTest, EvaluatesThenResumesToTheSameReport) {
  const std::string tasks = WriteTasks();
  const std::string results = *dir_ + "/results.jsonl";
  auto [code, out] = RunToEnd(Eval(tasks, results));
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("vs greedy"), std::string::npos) << out;
  // 3 generation items × (greedy 1 + 5 stochastic strategies × 2 seeds) + 1 loglik answer.
  const std::vector<std::string> lines = Lines(results);
  ASSERT_EQ(lines.size(), 3u * 11u + 1u);
  const nlohmann::json report = Comparable(results + ".report.json");
  EXPECT_EQ(report["generation_items"], 3);
  EXPECT_EQ(report["choice_items"], 1);
  ASSERT_EQ(report["strategies"].size(), 7u);
  EXPECT_EQ(report["strategies"][6]["strategy"], "loglik");
  EXPECT_GT(report["strategies"][2]["generated_tokens_per_answer"].get<double>(),
            report["strategies"][0]["generated_tokens_per_answer"].get<double>())
      << "best_of_n spends its samples";
  EXPECT_TRUE(report["strategies"][1].contains("vs_baseline"));
  const std::string svg = base::ReadFile(results + ".svg").value_or("");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg.substr(0, 80);
  EXPECT_NE(svg.find(">greedy</text>"), std::string::npos) << "the legend names the strategies";

  // Cut short: the first half of the answers and a torn line, as a kill leaves the file.
  const std::string resumed = *dir_ + "/resumed.jsonl";
  {
    std::ofstream cut(resumed);
    for (size_t i = 0; i < lines.size() / 2; ++i) cut << lines[i] << "\n";
    cut << lines[lines.size() / 2].substr(0, 20);
  }
  auto [again, again_out] = RunToEnd(Eval(tasks, resumed));
  ASSERT_EQ(again, 0) << again_out;
  EXPECT_NE(again_out.find(absl::StrCat(lines.size() - lines.size() / 2, " answers to compute")),
            std::string::npos)
      << again_out;
  EXPECT_EQ(Lines(resumed).size(), lines.size());
  EXPECT_EQ(Comparable(resumed + ".report.json"), report);
}

// The TRACE strategies end to end: the server forks, rolls every trace out and picks by the
// task's own extraction (sent as the answer pattern); CoT-decoding and EAGer are deterministic,
// so one answer per item, DeepConf samples, so one per item and seed (at T 1 here: the preset's
// T 0.2 leaves a random model's first step one token, hence one trace and nothing explored; for
// the same reason CoT-decoding's floor drops from the preset's 0.5·p_max to 0.01·p_max).
TEST_F(EvalE2eTest, TraceStrategiesExploreAndAnswerOncePerItem) {
  const std::string tasks = WriteTasks();
  const std::string results = *dir_ + "/trace.jsonl";
  auto [code, out] = RunToEnd(
      {kBin + "/arbor", "eval", "--coordinator=" + *coordinator_address_, "--tasks=" + tasks,
       "--strategies=greedy,cot_decoding:k=3:candidate_min_p=0.01,eager:theta=0:traces=3,"
       "deepconf:k=4:warmup=2:temperature=1",
       "--seeds=1,2", "--max_tokens=6", "--concurrency=3", "--results=" + results});
  ASSERT_EQ(code, 0) << out;
  // 3 generation items × (3 deterministic strategies + 2 seeds of DeepConf) + 1 loglik answer.
  EXPECT_EQ(Lines(results).size(), 3u * 5u + 1u);
  const nlohmann::json report = Comparable(results + ".report.json");
  ASSERT_EQ(report["strategies"].size(), 5u);
  EXPECT_EQ(report["strategies"][0]["explored_tokens_per_answer"].get<double>(), 0.0);
  for (int s : {1, 2, 3}) {
    const nlohmann::json& strategy = report["strategies"][s];
    // Each item's traces beyond the committed one were computed and pruned.
    EXPECT_GT(strategy["explored_tokens_per_answer"].get<double>(), 0.0) << strategy.dump();
    EXPECT_TRUE(strategy.contains("vs_baseline"));
  }
}

TEST_F(EvalE2eTest, CalibrateOnTextWritesAPolicyTheStrategiesAccept) {
  const std::string text = *dir_ + "/text.txt";
  {
    std::ofstream out(text);
    for (int p = 0; p < 6; ++p) {
      for (int w = 0; w < 40; ++w) out << "word" << (p * 7 + w) % 13 << " ";
      out << "\n\n";
    }
  }
  const std::string policy = *dir_ + "/policy.json";
  auto [code, out] =
      RunToEnd({kBin + "/arbor", "calibrate", "--coordinator=" + *coordinator_address_,
                "--text=" + text, "--policy_out=" + policy});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("entropy"), std::string::npos) << out;
  std::ifstream in(policy);
  const nlohmann::json written = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(written.contains("thresholds")) << written;
  EXPECT_LE(written["thresholds"]["lelvEntropy"].get<double>(),
            written["thresholds"]["helvEntropy"].get<double>());

  const std::string tasks = *dir_ + "/one.jsonl";
  std::ofstream(tasks) << R"({"id":"t","prompt":"Hello","answer":"x"})"
                       << "\n";
  auto [eval_code, eval_out] = RunToEnd(
      {kBin + "/arbor", "eval", "--coordinator=" + *coordinator_address_, "--tasks=" + tasks,
       "--strategies=greedy,search:policy_file=" + policy + ":label=calibrated", "--seeds=1",
       "--max_tokens=4", "--results=" + *dir_ + "/calibrated.jsonl"});
  EXPECT_EQ(eval_code, 0) << eval_out;
  EXPECT_NE(eval_out.find("calibrated"), std::string::npos) << eval_out;

  // Too little text fails with a message saying what to do.
  std::ofstream(text, std::ios::trunc) << "a few words only\n";
  auto [short_code, short_out] =
      RunToEnd({kBin + "/arbor", "calibrate", "--coordinator=" + *coordinator_address_,
                "--text=" + text, "--policy_out=" + policy});
  EXPECT_EQ(short_code, 1);
  EXPECT_NE(short_out.find("at least 100"), std::string::npos) << short_out;
}

}  // namespace
}  // namespace arbor
