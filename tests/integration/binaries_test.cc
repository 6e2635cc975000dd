// The three binaries as real processes: --help, health over gRPC on port 0, clean SIGTERM.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "model/make_model.h"
#include "rpc/health.h"
#include "tests/support/smollm2.h"
#include "tools/local_cluster.h"

namespace arbor::tools {
namespace {

const std::string kBin = ARBOR_BINARY_DIR "/bin";

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/", name, "-", getpid());
}

// Runs a command to completion; returns (exit code, output).
std::pair<int, std::string> RunToEnd(const std::vector<std::string>& argv,
                                     absl::Duration timeout = absl::Seconds(30)) {
  const std::string log = TempPath("out.log");
  std::filesystem::remove(log);
  absl::StatusOr<base::Subprocess> p = base::Subprocess::Start(argv, log);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return {-1, ""};
  const int code = p->Wait(timeout).value_or(-1);
  return {code, base::ReadFile(log).value_or("")};
}

class ServerBinaryTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The worker needs a model; the coordinator reads its tokenizer.
  static void SetUpTestSuite() {
    model_dir_ = new std::string(TempPath("tiny-model"));
    model::MakeModelOptions options;
    options.out_dir = *model_dir_;
    options.seed = 3;
    ASSERT_TRUE(model::MakeModel(options).ok());
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*model_dir_);
    delete model_dir_;
  }
  std::vector<std::string> Argv() const {
    return {kBin + "/" + GetParam(), "--model=" + *model_dir_};
  }
  static std::string* model_dir_;
};
std::string* ServerBinaryTest::model_dir_ = nullptr;

TEST_P(ServerBinaryTest, HelpExplainsFlags) {
  auto [code, out] = RunToEnd({kBin + "/" + GetParam(), "--help"});
  EXPECT_EQ(code, 0) << out;  // Help asked for is not an error.
  EXPECT_NE(out.find("--listen"), std::string::npos) << out;
  EXPECT_NE(out.find("--port_file"), std::string::npos) << out;
  EXPECT_NE(out.find("Usage:"), std::string::npos) << out;
}

TEST_P(ServerBinaryTest, ServesHealthAndDrainsOnSigterm) {
  std::string address;
  absl::StatusOr<base::Subprocess> server =
      StartServer(Argv(), "127.0.0.1:0", TempPath(GetParam() + ".port"),
                  TempPath(GetParam() + ".log"), absl::Seconds(30), &address);
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<bool> serving = rpc::CheckServing(address, absl::Seconds(5));
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_TRUE(*serving);
  EXPECT_EQ(server->Stop(absl::Seconds(20)), 0);
}

TEST_P(ServerBinaryTest, BusyPortFailsClearly) {
  std::string address;
  auto first = StartServer(Argv(), "127.0.0.1:0", TempPath("a.port"), TempPath("a.log"),
                           absl::Seconds(30), &address);
  ASSERT_TRUE(first.ok()) << first.status();
  std::vector<std::string> argv = Argv();
  argv.push_back("--listen=" + address);
  auto [code, out] = RunToEnd(argv);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("cannot listen"), std::string::npos) << out;
  // Started as `arbor up` starts its servers, the failure carries the server's own words.
  auto second = StartServer(Argv(), address, TempPath("b.port"), TempPath("b.log"),
                            absl::Seconds(30), &address);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("cannot listen"), std::string::npos) << second.status();
}

// A calibrated policy file is accepted; a malformed one or a bad value stops the server at
// start with the file and field named.
TEST_P(ServerBinaryTest, PolicyFileIsCheckedAtStart) {
  const std::string good = TempPath("good-policy.json");
  std::ofstream(good) << R"({"thresholds": {"lelvEntropy": 0.5}, "branch": {"width": 3}})";
  std::vector<std::string> argv = Argv();
  argv.push_back("--policy_file=" + good);
  std::string address;
  absl::StatusOr<base::Subprocess> server =
      StartServer(argv, "127.0.0.1:0", TempPath(GetParam() + "-policy.port"),
                  TempPath(GetParam() + "-policy.log"), absl::Seconds(30), &address);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(server->Stop(absl::Seconds(20)), 0);

  for (const auto& [content, needle] : std::vector<std::pair<std::string, std::string>>{
           {"{not json", "not an arbor.v1.PolicyConfig"},
           {R"({"branch": {"width": 1}})", "branch.width"}}) {
    const std::string bad = TempPath("bad-policy.json");
    std::ofstream(bad, std::ios::trunc) << content;
    argv.back() = "--policy_file=" + bad;
    argv.push_back("--listen=127.0.0.1:0");
    auto [code, out] = RunToEnd(argv);
    argv.pop_back();
    EXPECT_NE(code, 0) << out;
    EXPECT_NE(out.find(bad), std::string::npos) << out;
    EXPECT_NE(out.find(needle), std::string::npos) << out;
  }
}

// The example flag files in deploy/ name only flags the binaries know.
TEST_P(ServerBinaryTest, DeployFlagFileParses) {
  const std::string name = GetParam() == "arbor-worker" ? "worker" : "coordinator";
  auto [code, out] =
      RunToEnd({kBin + "/" + GetParam(),
                "--flagfile=" ARBOR_SOURCE_DIR "/deploy/" + name + ".flags", "--help"});
  EXPECT_EQ(out.find("ERROR"), std::string::npos) << out;
  EXPECT_NE(out.find("Usage:"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Binaries, ServerBinaryTest,
                         ::testing::Values("arbor-coordinator", "arbor-worker"));

TEST(ArborCli, HelpListsCommands) {
  auto [code, out] = RunToEnd({kBin + "/arbor", "--help"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("demo"), std::string::npos) << out;
  EXPECT_NE(out.find("health"), std::string::npos) << out;
}

TEST(ArborCli, UnknownCommandFails) {
  auto [code, out] = RunToEnd({kBin + "/arbor", "frobnicate"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos) << out;
}

TEST(ArborCli, HealthOfUnreachableServerFails) {
  auto [code, out] = RunToEnd({kBin + "/arbor", "health", "127.0.0.1:1"});
  EXPECT_EQ(code, 1) << out;
  // Client commands say how to reach a coordinator.
  std::tie(code, out) = RunToEnd({kBin + "/arbor", "workers", "--coordinator=127.0.0.1:1"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("start one with `arbor up`"), std::string::npos) << out;
  EXPECT_NE(out.find("--coordinator=HOST:PORT"), std::string::npos) << out;
}

// `arbor up --policy_file` hands the file to the coordinator: a bad one stops the start with the
// coordinator's own words, naming the file and the field.
TEST(ArborCli, UpPassesItsPolicyFileOn) {
  const std::string bad = TempPath("up-policy.json");
  std::ofstream(bad, std::ios::trunc) << R"({"branch": {"width": 1}})";
  auto [code, out] = RunToEnd({kBin + "/arbor", "up", "--model=tiny", "--num_workers=1",
                               "--port=0", "--http_port=-1", "--policy_file=" + bad},
                              absl::Seconds(90));
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find(bad), std::string::npos) << out;
  EXPECT_NE(out.find("branch.width"), std::string::npos) << out;
}

// The demo on its default real model (SmolLM2-135M-Instruct, fetched into the cache on first
// use): the default policy's traces are judged in the tree; the search's answer reads as English,
// its thresholds are stated, and it branched.
TEST(ArborCli, DemoAnswersInEnglishAndStopsCleanly) {
  const absl::StatusOr<std::string> model = arbor::testing::SmolLM2Path();  // Fetched once.
  if (absl::IsUnavailable(model.status())) GTEST_SKIP() << model.status();  // No network.
  ASSERT_TRUE(model.ok()) << model.status();
  auto [code, out] = RunToEnd({kBin + "/arbor", "demo"}, absl::Minutes(5));
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("Stopped cleanly"), std::string::npos) << out;
  EXPECT_NE(out.find("set by hand for Llama 3's 128k-token vocabulary"), std::string::npos) << out;
  // 1. CoT-decoding: one fork at the first token, each trace's answer noted in the tree.
  const size_t search_part = out.find("2. Entropix search on request");
  ASSERT_NE(search_part, std::string::npos) << out;
  EXPECT_NE(out.substr(0, search_part).find("branch at node"), std::string::npos) << out;
  EXPECT_NE(out.substr(0, search_part).find("answer «"), std::string::npos) << out;
  // 2. Entropix search.
  const size_t answer = out.find("Assistant: ", search_part);
  const size_t tree = out.find("The search tree of", answer);
  ASSERT_NE(answer, std::string::npos) << out;
  ASSERT_NE(tree, std::string::npos) << out;
  // Common English words, counted as whole words in the streamed answer.
  int english = 0;
  std::string word;
  for (char c : out.substr(answer, tree - answer) + " ") {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      continue;
    }
    for (const char* common : {"the", "and", "to", "you", "a", "of", "your", "for", "is", "can"}) {
      english += word == common;
    }
    word.clear();
  }
  EXPECT_GE(english, 10) << out;
  EXPECT_NE(out.find("branch at node", search_part), std::string::npos) << out;
}

}  // namespace
}  // namespace arbor::tools
