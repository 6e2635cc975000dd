// The client commands of `arbor` against an in-process fake Generation service (the seam: the
// real one lives elsewhere) and the real Cluster service, on free loopback ports.
#include <gtest/gtest.h>

#include <sstream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "base/fake_clock.h"
#include "coordinator/cluster/cluster_service.h"
#include "rpc/server.h"
#include "tools/client.h"
#include "views/tree_diff.h"
#include "views/tree_display.h"

ABSL_DECLARE_FLAG(int, limit);
ABSL_DECLARE_FLAG(std::string, state);
ABSL_DECLARE_FLAG(std::string, tag);
ABSL_DECLARE_FLAG(std::string, owner);
ABSL_DECLARE_FLAG(absl::Duration, since);

namespace arbor::tools {
namespace {

using arbor::v1::GenerateEvent;

class FakeGeneration final : public arbor::v1::Generation::Service {
 public:
  grpc::Status Generate(grpc::ServerContext*, const arbor::v1::GenerateRequest* request,
                        grpc::ServerWriter<GenerateEvent>* writer) override {
    last_request = *request;
    if (request->text() == "bad") {
      return {grpc::StatusCode::INVALID_ARGUMENT, "policy.branch.width: 1 is outside [2, 64]"};
    }
    for (const GenerateEvent& event : request->text() == "retract" ? RetractScript() : Script()) {
      writer->Write(event);
    }
    return grpc::Status::OK;
  }
  grpc::Status Watch(grpc::ServerContext*, const arbor::v1::JobRef* ref,
                     grpc::ServerWriter<GenerateEvent>* writer) override {
    if (ref->job_id() != "job-1") return {grpc::StatusCode::NOT_FOUND, "no job " + ref->job_id()};
    for (const GenerateEvent& event : Script()) writer->Write(event);
    return grpc::Status::OK;
  }
  grpc::Status Submit(grpc::ServerContext*, const arbor::v1::GenerateRequest*,
                      arbor::v1::JobRef* ref) override {
    ref->set_job_id("job-1");
    return grpc::Status::OK;
  }
  grpc::Status GetJob(grpc::ServerContext*, const arbor::v1::JobRef* ref,
                      arbor::v1::Job* job) override {
    if (ref->job_id() == "job-3") {  // Replays as "retract": job-2, whose tree differs.
      *job = TheJob();
      job->set_job_id("job-3");
      job->mutable_request()->set_text("retract");
      return grpc::Status::OK;
    }
    if (ref->job_id() != "job-1") return {grpc::StatusCode::NOT_FOUND, "no job " + ref->job_id()};
    *job = TheJob();
    return grpc::Status::OK;
  }
  grpc::Status Cancel(grpc::ServerContext* context, const arbor::v1::JobRef* ref,
                      arbor::v1::Job* job) override {
    grpc::Status status = GetJob(context, ref, job);
    job->set_state(arbor::v1::JOB_STATE_CANCELLED);
    return status;
  }
  grpc::Status ListJobs(grpc::ServerContext*, const arbor::v1::ListJobsRequest* request,
                        arbor::v1::ListJobsResponse* response) override {
    last_list = *request;
    *response->add_jobs() = TheJob();
    return grpc::Status::OK;
  }
  grpc::Status GetTree(grpc::ServerContext*, const arbor::v1::GetTreeRequest* request,
                       arbor::v1::Tree* tree) override {
    const std::string& id = request->job_id();
    if (id != "job-1" && id != "job-2" && id != "job-3") {
      return {grpc::StatusCode::NOT_FOUND, "no job"};
    }
    tree->set_job_id(id);
    tree->add_prompt_token_ids(5);
    arbor::v1::TreeNode* root = tree->add_nodes();
    root->set_id(0);
    root->set_parent(-1);
    root->set_token_id(-1);
    root->set_status(arbor::v1::NODE_STATUS_PROMPT);
    root->add_children(1);
    arbor::v1::TreeNode* node = tree->add_nodes();
    node->set_id(1);
    node->set_token_id(id == "job-2" ? 43 : 42);
    node->set_text(" world");
    node->set_position(1);
    node->set_strategy(arbor::v1::STRATEGY_ARGMAX);
    node->set_status(arbor::v1::NODE_STATUS_COMMITTED);
    return grpc::Status::OK;
  }

  // As the coordinator answers Replay: job-1 replays as itself, job-3 as job-2, whose tree
  // differs at node 1.
  grpc::Status Replay(grpc::ServerContext* context, const arbor::v1::ReplayRequest* ref,
                      arbor::v1::ReplayResult* result) override {
    replayed_policy = ref->policy();
    if (ref->job_id() != "job-1" && ref->job_id() != "job-3") {
      return {grpc::StatusCode::NOT_FOUND, "no job " + ref->job_id()};
    }
    const std::string replay_id = ref->job_id() == "job-3" ? "job-2" : "job-1";
    arbor::v1::GetTreeRequest expected_request, actual_request;
    expected_request.set_job_id(ref->job_id());
    actual_request.set_job_id(replay_id);
    arbor::v1::Tree expected, actual;
    GetTree(context, &expected_request, &expected);
    GetTree(context, &actual_request, &actual);
    *result = views::CompareReplayTrees(expected, actual);
    result->set_job_id(ref->job_id());
    result->set_replay_job_id(replay_id);
    result->set_policy_changed(ref->has_policy());
    return grpc::Status::OK;
  }
  arbor::v1::PolicyConfig replayed_policy;  // The change the last Replay call carried.

  arbor::v1::GenerateRequest last_request;
  arbor::v1::ListJobsRequest last_list;

 private:
  static arbor::v1::Job TheJob() {
    arbor::v1::Job job;
    job.set_job_id("job-1");
    job.set_state(arbor::v1::JOB_STATE_FINISHED);
    job.set_worker_id("w1");
    job.set_text("Hello world");
    job.set_client_tag("mine");
    job.mutable_usage()->set_generated_tokens(2);
    return job;
  }
  // A job whose second token is backspaced and re-drawn, with an insert, a wide (CJK) token and
  // a token that would drive the terminal: committed text "Help ...世界\x1b[31m!\t".
  static std::vector<GenerateEvent> RetractScript() {
    std::vector<GenerateEvent> events(8);
    for (auto& e : events) e.set_job_id("job-2");
    const auto token = [](GenerateEvent& e, int node, int position, const std::string& text,
                          arbor::v1::Strategy strategy) {
      e.mutable_token()->set_node_id(node);
      e.mutable_token()->set_position(position);
      e.mutable_token()->set_text(text);
      e.mutable_token()->set_strategy(strategy);
    };
    token(events[0], 1, 3, "Hel", arbor::v1::STRATEGY_ARGMAX);
    token(events[1], 2, 4, "lo", arbor::v1::STRATEGY_ADAPTIVE);
    events[2].mutable_backspace()->set_removed_node_id(2);
    events[2].mutable_backspace()->set_position(4);
    token(events[3], 3, 4, "p", arbor::v1::STRATEGY_RESAMPLE);
    events[4].mutable_insert()->add_node_ids(4);
    events[4].mutable_insert()->add_token_ids(2564);
    events[4].mutable_insert()->add_logprobs(-3.0f);
    events[4].mutable_insert()->set_text(" ...");
    token(events[5], 5, 6, "世界", arbor::v1::STRATEGY_ADAPTIVE);
    token(events[6], 6, 7, "\x1b[31m!\t", arbor::v1::STRATEGY_HOT_SAMPLE);
    events[7].mutable_finished()->set_reason(arbor::v1::FINISH_REASON_MAX_TOKENS);
    return events;
  }
  static std::vector<GenerateEvent> Script() {
    std::vector<GenerateEvent> events(4);
    for (auto& e : events) e.set_job_id("job-1");
    events[0].mutable_token()->set_text("Hello");
    events[0].mutable_token()->set_strategy(arbor::v1::STRATEGY_ARGMAX);
    events[0].mutable_token()->mutable_metrics()->set_entropy(0.05f);
    events[1].mutable_branch_opened()->add_candidates();
    events[1].mutable_branch_opened()->add_candidates();
    events[2].mutable_token()->set_text(" world");
    events[2].mutable_token()->set_strategy(arbor::v1::STRATEGY_BRANCH);
    events[2].mutable_token()->set_position(1);
    auto* finished = events[3].mutable_finished();
    finished->set_reason(arbor::v1::FINISH_REASON_MAX_TOKENS);
    finished->mutable_usage()->set_prompt_tokens(3);
    finished->mutable_usage()->set_generated_tokens(2);
    finished->mutable_strategies()->set_argmax(1);
    finished->mutable_strategies()->set_branch(1);
    return events;
  }
};

class CliTest : public testing::Test {
 protected:
  void SetUp() override {
    auto server = rpc::Server::Start("127.0.0.1:0", {&generation_, &cluster_});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_.coordinator = server_->address();
    client_.timeout = absl::Seconds(10);
  }
  Output output() { return Output{out_, err_}; }

  FakeGeneration generation_;
  base::FakeClock clock_;
  coordinator::WorkerPool pool_{coordinator::WorkerPoolOptions{}, &clock_};
  coordinator::ClusterService cluster_{&pool_, absl::Seconds(1)};
  std::unique_ptr<rpc::Server> server_;
  ClientOptions client_;
  std::ostringstream out_, err_;
};

TEST(BuildGenerateRequest, ExactlyOnePromptAndWellFormedFlags) {
  PromptOptions options;
  EXPECT_EQ(BuildGenerateRequest(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.prompt = "hi";
  options.tokens = "1,2";
  EXPECT_FALSE(BuildGenerateRequest(options).ok());
  options.prompt.clear();
  auto request = BuildGenerateRequest(options);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->tokens().token_ids_size(), 2);
  options.tokens = "1,x";
  EXPECT_EQ(BuildGenerateRequest(options).status().message(), "--tokens: 'x' is not an integer");
  options.tokens.clear();
  options.chat = R"([{"role":"user","content":"Hi"}])";
  options.policy_mode = "canonical";
  options.max_tokens = 7;
  options.seed = 9;
  request = BuildGenerateRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->chat().messages(0).content(), "Hi");
  EXPECT_TRUE(request->chat().add_generation_prompt());
  EXPECT_EQ(request->policy().mode(), arbor::v1::POLICY_MODE_CANONICAL);
  EXPECT_EQ(request->max_tokens(), 7);
  EXPECT_EQ(request->seed(), 9u);
  options.chat = "{not json";
  EXPECT_EQ(BuildGenerateRequest(options).status().message().substr(0, 7), "--chat:");
  options.chat = R"([{"role":"user","content":"Hi"}])";
  options.policy_mode = "cot_decoding";  // A preset: its whole policy, not only the mode.
  request = BuildGenerateRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->policy().mode(), arbor::v1::POLICY_MODE_TRACE);
  EXPECT_TRUE(request->policy().trace().fork_first());
  options.policy_mode = "beam";
  EXPECT_EQ(BuildGenerateRequest(options).status().message().substr(0, 14), "--policy_mode:");
}

TEST_F(CliTest, GenerateStreamsTextThenASummary) {
  arbor::v1::GenerateRequest request;
  request.set_text("Hi");
  ASSERT_EQ(Generate(client_, request, false, output()), 0) << err_.str();
  EXPECT_EQ(generation_.last_request.text(), "Hi");
  // The answer alone on stdout; the summary on stderr.
  EXPECT_EQ(out_.str(), "Hello world\n");
  const std::string text = err_.str();
  EXPECT_EQ(text.rfind("job job-1 finished: FINISH_REASON_MAX_TOKENS", 0), 0u) << text;
  EXPECT_NE(text.find("argmax 1, adaptive 0, branch 1"), std::string::npos) << text;
}

TEST_F(CliTest, GenerateColoursByStrategyOnTerminals) {
  client_.color = true;
  arbor::v1::GenerateRequest request;
  request.set_text("Hi");
  ASSERT_EQ(Generate(client_, request, false, output()), 0);
  EXPECT_NE(out_.str().find("\x1b["), std::string::npos);
  EXPECT_NE(out_.str().find("\x1b[32m world\x1b[0m"), std::string::npos) << out_.str();
}

TEST_F(CliTest, GenerateShowsMetricsPerToken) {
  arbor::v1::GenerateRequest request;
  request.set_text("Hi");
  ASSERT_EQ(Generate(client_, request, true, output()), 0);
  const std::string text = out_.str();
  EXPECT_NE(text.find("ARGMAX"), std::string::npos) << text;
  EXPECT_NE(text.find("H=0.050"), std::string::npos) << text;
  EXPECT_NE(text.find("    1 branch                                  2 candidates after node 0"),
            std::string::npos)
      << text;
  // The committed text follows the table; the summary goes to stderr.
  EXPECT_NE(text.find("\n\nHello world\n"), std::string::npos) << text;
  EXPECT_EQ(err_.str().rfind("job job-1 finished", 0), 0u) << err_.str();
}

// The terminal shows the committed text only: the backspaced "lo" never, the insert always, the
// control bytes escaped.
TEST_F(CliTest, GenerateShowsExactlyTheCommittedText) {
  arbor::v1::GenerateRequest request;
  request.set_text("retract");
  ASSERT_EQ(Generate(client_, request, false, output()), 0) << err_.str();
  EXPECT_EQ(out_.str(), "Help ...世界\\x1b[31m!\\t\n");
  EXPECT_EQ(err_.str().rfind("job job-2 finished", 0), 0u) << err_.str();
  out_.str("");
  client_.color = true;
  ASSERT_EQ(Generate(client_, request, false, output()), 0) << err_.str();
  const std::string streamed = out_.str();
  EXPECT_EQ(streamed.find("lo"), std::string::npos) << streamed;
  EXPECT_NE(out_.str().find("\x1b[" + views::StrategyAnsiColor(arbor::v1::STRATEGY_INSERT) +
                            "m ...\x1b[0m"),
            std::string::npos)
      << out_.str();
}

// With metrics, every event is a row of one table: the details column starts at the same
// display column on every row, wide characters included; the backspace row names what it
// retracted; the committed text follows.
TEST_F(CliTest, MetricsRowsAlignByDisplayWidth) {
  arbor::v1::GenerateRequest request;
  request.set_text("retract");
  ASSERT_EQ(Generate(client_, request, true, output()), 0) << err_.str();
  const std::string text = out_.str();
  std::istringstream lines(text);
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    size_t details = std::string::npos;
    for (const char* marker : {"lp=", "retracted node", "logprob and"}) {
      details = std::min(details, line.find(marker));
    }
    if (details == std::string::npos) continue;
    ++rows;
    EXPECT_EQ(views::DisplayWidth(line.substr(0, details)), 46) << line;
  }
  EXPECT_EQ(rows, 8) << text;  // Header, 5 tokens, the backspace, the insert.
  EXPECT_NE(text.find("    4 backspace      \"lo\""), std::string::npos) << text;
  EXPECT_NE(text.find("    5 INSERT         \" ...\""), std::string::npos) << text;
  EXPECT_NE(text.find("    6 ADAPTIVE       \"世界\"  "), std::string::npos) << text;
  EXPECT_NE(text.find("\n\nHelp ...世界\\x1b[31m!\\t\n"), std::string::npos) << text;
  EXPECT_EQ(err_.str().rfind("job job-2 finished", 0), 0u) << err_.str();
}

TEST_F(CliTest, GenerateJsonIsOneObjectPerEvent) {
  client_.json = true;
  arbor::v1::GenerateRequest request;
  request.set_text("Hi");
  ASSERT_EQ(Generate(client_, request, false, output()), 0);
  std::istringstream lines(out_.str());
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(line.front(), '{');
    EXPECT_EQ(line.back(), '}');
    ++count;
  }
  EXPECT_EQ(count, 4);
  EXPECT_NE(out_.str().find("\"strategy\":\"STRATEGY_BRANCH\""), std::string::npos);
}

TEST_F(CliTest, RpcErrorsPrintCodeAndMessageAndExit1) {
  arbor::v1::GenerateRequest request;
  request.set_text("bad");
  EXPECT_EQ(Generate(client_, request, false, output()), 1);
  EXPECT_EQ(err_.str(),
            "arbor: generate: INVALID_ARGUMENT: policy.branch.width: 1 is outside [2, 64]\n");
  err_.str("");
  EXPECT_EQ(ShowJob(client_, "nope", output()), 1);
  EXPECT_EQ(err_.str(), "arbor: job nope: NOT_FOUND: no job nope\n");
  EXPECT_EQ(Watch(client_, "nope", false, output()), 1);
  EXPECT_EQ(DrainWorker(client_, "ghost", output()), 1);
  EXPECT_NE(err_.str().find("drain ghost: NOT_FOUND"), std::string::npos);
  ClientOptions nowhere = client_;
  nowhere.coordinator = "127.0.0.1:1";
  nowhere.timeout = absl::Milliseconds(300);
  EXPECT_EQ(ListJobs(nowhere, {}, output()), 1);
}

TEST_F(CliTest, SubmitWatchJobsJobCancel) {
  arbor::v1::GenerateRequest request;
  request.set_text("Hi");
  ASSERT_EQ(Submit(client_, request, output()), 0);
  EXPECT_EQ(out_.str(), "job-1\n");
  out_.str("");
  ASSERT_EQ(Watch(client_, "job-1", false, output()), 0);
  EXPECT_EQ(out_.str().rfind("Hello world", 0), 0u);
  out_.str("");
  arbor::v1::ListJobsRequest list;
  list.set_limit(5);
  ASSERT_EQ(ListJobs(client_, list, output()), 0);
  EXPECT_EQ(generation_.last_list.limit(), 5);
  EXPECT_NE(out_.str().find("JOB"), std::string::npos);
  EXPECT_NE(out_.str().find("FINISHED"), std::string::npos);
  EXPECT_NE(out_.str().find("mine"), std::string::npos);
  out_.str("");
  ASSERT_EQ(ShowJob(client_, "job-1", output()), 0);
  EXPECT_NE(out_.str().find("Hello world"), std::string::npos);
  out_.str("");
  ASSERT_EQ(CancelJob(client_, "job-1", output()), 0);
  EXPECT_EQ(out_.str(), "job job-1: CANCELLED\n");
}

TEST(JobsFlagsTest, FiltersBecomeTheRequestAndBadOnesAreNamed) {
  absl::FlagSaver saver;
  const absl::Time now = absl::FromUnixSeconds(1'000'000);
  absl::SetFlag(&FLAGS_limit, 7);
  absl::SetFlag(&FLAGS_state, "running, Finished");
  absl::SetFlag(&FLAGS_tag, "eval");
  absl::SetFlag(&FLAGS_owner, "alice");
  absl::SetFlag(&FLAGS_since, absl::Hours(2));
  absl::StatusOr<arbor::v1::ListJobsRequest> request = ListJobsRequestFromFlags(now);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->limit(), 7);
  ASSERT_EQ(request->states_size(), 2);
  EXPECT_EQ(request->states(0), arbor::v1::JOB_STATE_RUNNING);
  EXPECT_EQ(request->states(1), arbor::v1::JOB_STATE_FINISHED);
  EXPECT_EQ(request->client_tag(), "eval");
  EXPECT_EQ(request->owner(), "alice");
  EXPECT_EQ(request->created_after_unix_ms(), absl::ToUnixMillis(now - absl::Hours(2)));

  absl::SetFlag(&FLAGS_state, "done");
  EXPECT_EQ(ListJobsRequestFromFlags(now).status().message(),
            "--state: 'done' is not one of queued, running, finished, cancelled, failed");
  absl::SetFlag(&FLAGS_state, "");
  absl::SetFlag(&FLAGS_since, -absl::Minutes(1));
  EXPECT_TRUE(absl::StrContains(ListJobsRequestFromFlags(now).status().message(), "--since"));
}

TEST_F(CliTest, TreeInEveryFormat) {
  TreeView view;
  view.format = "json";
  ASSERT_EQ(ShowTree(client_, "job-1", view, output()), 0) << err_.str();
  EXPECT_NE(out_.str().find("\"arbor.tree\""), std::string::npos) << out_.str();
  out_.str("");
  view.format = "dot";
  ASSERT_EQ(ShowTree(client_, "job-1", view, output()), 0);
  EXPECT_EQ(out_.str().rfind("digraph", 0), 0u) << out_.str();
  out_.str("");
  view.format = "text";
  ASSERT_EQ(ShowTree(client_, "job-1", view, output()), 0);
  EXPECT_NE(out_.str().find("world"), std::string::npos) << out_.str();
  view.format = "svg";
  EXPECT_EQ(ShowTree(client_, "job-1", view, output()), 2);
  EXPECT_NE(err_.str().find("--format"), std::string::npos);
}

// Replay (Generation.Replay) says whether the replay grew the same tree: the same tree, then one
// whose token differs at node 1 (named with both values), and an unknown job.
TEST_F(CliTest, ReplayComparesTheTrees) {
  ASSERT_EQ(ReplayJob(client_, "job-1", {}, output()), 0) << err_.str();
  EXPECT_NE(out_.str().find("identical: job job-1 grew the tree of job-1 node for node (2 nodes)"),
            std::string::npos)
      << out_.str();
  out_.str("");
  ASSERT_EQ(ReplayJob(client_, "job-3", {}, output()), 1) << err_.str();
  EXPECT_NE(out_.str().find("different: job job-2 departs from job-3 at node 1 (position 1)"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("token_id: 42 -> 43"), std::string::npos) << out_.str();
  EXPECT_EQ(ReplayJob(client_, "job-9", {}, output()), 1);
  EXPECT_NE(err_.str().find("NOT_FOUND"), std::string::npos) << err_.str();
}

// A changed policy travels with the call, and the answer says the replay ran it.
TEST_F(CliTest, ReplaySendsAChangedPolicy) {
  arbor::v1::PolicyConfig change;
  change.mutable_sampling()->set_temperature(0.3f);
  ASSERT_EQ(ReplayJob(client_, "job-1", change, output()), 0) << err_.str();
  EXPECT_NE(out_.str().find("identical: job job-1, with the changed policy, grew the tree"),
            std::string::npos)
      << out_.str();
  EXPECT_FLOAT_EQ(generation_.replayed_policy.sampling().temperature(), 0.3f);
  ASSERT_EQ(ReplayJob(client_, "job-1", {}, output()), 0);
  EXPECT_FALSE(generation_.replayed_policy.has_sampling()) << "no change, no policy sent";
}

// --around and --depth are checked before any call where they can be, and an unknown node is
// named with the flag after the tree arrives.
TEST_F(CliTest, TreeAroundAndDepthAreValidated) {
  TreeView view;
  view.around = 1;
  view.depth = 2;
  ASSERT_EQ(ShowTree(client_, "job-1", view, output()), 0) << err_.str();
  EXPECT_NE(out_.str().find("committed path around node 1, positions 1-1:"), std::string::npos)
      << out_.str();
  view.around = 99;
  EXPECT_EQ(ShowTree(client_, "job-1", view, output()), 2);
  EXPECT_EQ(
      err_.str(),
      "arbor tree: --around: node 99 is not in the tree of job job-1 (2 nodes from root 0)\n");
  err_.str("");
  view.around = -3;
  EXPECT_EQ(ShowTree(client_, "job-1", view, output()), 2);
  EXPECT_EQ(err_.str().rfind("arbor tree: --around: -3 is not a node id", 0), 0u) << err_.str();
  err_.str("");
  view.around = 1;
  view.format = "dot";
  EXPECT_EQ(ShowTree(client_, "job-1", view, output()), 2);
  EXPECT_EQ(err_.str(), "arbor tree: --around: only with --format text\n");
  err_.str("");
  view = TreeView{};
  view.depth = 0;
  EXPECT_EQ(ShowTree(client_, "job-1", view, output()), 2);
  EXPECT_EQ(err_.str(), "arbor tree: --depth: must be at least 1, got 0\n");
}

TEST_F(CliTest, WorkersTableAndDrain) {
  arbor::v1::WorkerInfo info;
  info.set_worker_id("w1");
  info.set_backend("cpu");
  info.mutable_model()->set_name("tiny");
  ASSERT_TRUE(pool_.Register("127.0.0.1:7001", info).ok());
  ASSERT_EQ(ListWorkers(client_, output()), 0);
  const std::string table = out_.str();
  EXPECT_NE(table.find("WORKER"), std::string::npos);
  EXPECT_NE(table.find("127.0.0.1:7001"), std::string::npos);
  EXPECT_NE(table.find("READY"), std::string::npos);
  EXPECT_NE(table.find("tiny"), std::string::npos);
  out_.str("");
  ASSERT_EQ(DrainWorker(client_, "w1", output()), 0);
  EXPECT_EQ(out_.str(), "worker w1 draining; 0 job(s) being re-homed\n");
  out_.str("");
  client_.json = true;
  ASSERT_EQ(ListWorkers(client_, output()), 0);
  EXPECT_NE(out_.str().find("WORKER_STATE_DRAINING"), std::string::npos);
}

}  // namespace
}  // namespace arbor::tools
