// The whole system as real processes on loopback: arbor-coordinator (with the model's
// tokenizer) over two arbor-worker processes on a tiny model made in a temporary directory.
// Concurrency, reproducibility, cancellation freeing KV on the workers, deadlines, a worker
// killed with SIGKILL mid-job, a worker drained mid-job, and a table of invalid requests.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "arbor/v1/cluster.grpc.pb.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "model/make_model.h"
#include "rpc/health.h"
#include "tests/integration/e2e_cluster.h"
#include "views/tree_diff.h"

namespace arbor {
namespace {

constexpr int kVocab = 512;  // The tiny preset's.

std::string TempPath(const std::string& name) {
  return absl::StrCat(testing::TempDir(), "/coordinator-e2e-", getpid(), "-", name);
}

std::vector<v1::GenerateEvent> ReadAll(grpc::ClientReaderInterface<v1::GenerateEvent>& reader,
                                       grpc::Status* status) {
  std::vector<v1::GenerateEvent> events;
  v1::GenerateEvent event;
  while (reader.Read(&event)) events.push_back(event);
  *status = reader.Finish();
  return events;
}

std::vector<v1::GenerateEvent> Watch(v1::Generation::Stub& stub, const std::string& job_id) {
  grpc::ClientContext context;
  v1::JobRef ref;
  ref.set_job_id(job_id);
  grpc::Status status;
  std::vector<v1::GenerateEvent> events = ReadAll(*stub.Watch(&context, ref), &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return events;
}

// Watches a job until its first event, then stops watching; the job goes on.
void AwaitFirstEvent(v1::Generation::Stub& stub, const std::string& job_id) {
  grpc::ClientContext context;
  v1::JobRef ref;
  ref.set_job_id(job_id);
  auto reader = stub.Watch(&context, ref);
  v1::GenerateEvent event;
  EXPECT_TRUE(reader->Read(&event)) << job_id;
  context.TryCancel();
  reader->Finish();
}

std::string Submit(v1::Generation::Stub& stub, const v1::GenerateRequest& request) {
  grpc::ClientContext context;
  v1::JobRef ref;
  const grpc::Status status = stub.Submit(&context, request, &ref);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return ref.job_id();
}

v1::GenerateRequest TextRequest(const std::string& text, int max_tokens, uint64_t seed) {
  v1::GenerateRequest request;
  request.set_text(text);
  request.set_max_tokens(max_tokens);
  request.set_seed(seed);
  request.mutable_stop()->set_ignore_eos(true);
  return request;
}

// The job's record; a failed GetJob fails the test and returns an empty Job.
v1::Job GetJob(v1::Generation::Stub& stub, const std::string& job_id) {
  grpc::ClientContext context;
  v1::JobRef ref;
  ref.set_job_id(job_id);
  v1::Job job;
  const grpc::Status status = stub.GetJob(&context, ref, &job);
  EXPECT_TRUE(status.ok()) << job_id << ": " << status.error_message();
  return job;
}

// The job's whole tree with its alternatives; a failed GetTree fails the test.
v1::Tree GetTree(v1::Generation::Stub& stub, const std::string& job_id) {
  grpc::ClientContext context;
  v1::GetTreeRequest request;
  request.set_job_id(job_id);
  request.set_include_top_logprobs(true);
  v1::Tree tree;
  const grpc::Status status = stub.GetTree(&context, request, &tree);
  EXPECT_TRUE(status.ok()) << job_id << ": " << status.error_message();
  return tree;
}

// Whether a job's events end with a finished event for max_tokens (the test fails otherwise).
bool EndedAtMaxTokens(const std::vector<v1::GenerateEvent>& events, const std::string& job_id) {
  if (events.empty() || !events.back().has_finished()) {
    ADD_FAILURE() << job_id << ": the stream did not end with a finished event";
    return false;
  }
  EXPECT_EQ(events.back().finished().reason(), v1::FINISH_REASON_MAX_TOKENS)
      << job_id << ": " << events.back().finished().error();
  return true;
}

// Submits eight 400-token jobs and returns their ids once they are under way.
std::vector<std::string> SubmitEightUnderWay(v1::Generation::Stub& stub, const std::string& prefix,
                                             uint64_t seed) {
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) {
    ids.push_back(Submit(stub, TextRequest(absl::StrCat(prefix, i), 400, seed + i)));
  }
  AwaitFirstEvent(stub, ids.back());
  return ids;
}

// Generate requests each broken in one field, by name; every door must refuse them.
using Edit = std::function<void(v1::GenerateRequest&)>;
std::vector<std::pair<const char*, Edit>> BadGenerateRequests() {
  return {
      {"no prompt", [](v1::GenerateRequest& r) { r.clear_prompt(); }},
      {"empty text", [](v1::GenerateRequest& r) { r.set_text(""); }},
      {"prompt fills the context",  // The tiny model's context is 2048 tokens.
       [](v1::GenerateRequest& r) {
         for (int i = 0; i < 2048; ++i) r.mutable_tokens()->add_token_ids(1);
       }},
      {"empty tokens", [](v1::GenerateRequest& r) { r.mutable_tokens(); }},
      {"negative token", [](v1::GenerateRequest& r) { r.mutable_tokens()->add_token_ids(-1); }},
      {"token >= vocab", [](v1::GenerateRequest& r) { r.mutable_tokens()->add_token_ids(kVocab); }},
      {"no chat messages", [](v1::GenerateRequest& r) { r.mutable_chat(); }},
      {"bad chat role",
       [](v1::GenerateRequest& r) {
         auto* m = r.mutable_chat()->add_messages();
         m->set_role("wizard");
         m->set_content("hi");
       }},
      {"negative max_tokens", [](v1::GenerateRequest& r) { r.set_max_tokens(-1); }},
      {"max_tokens over context", [](v1::GenerateRequest& r) { r.set_max_tokens(100000); }},
      {"top_logprobs 65", [](v1::GenerateRequest& r) { r.set_top_logprobs(65); }},
      {"negative deadline", [](v1::GenerateRequest& r) { r.set_deadline_ms(-5); }},
      {"long client_tag", [](v1::GenerateRequest& r) { r.set_client_tag(std::string(300, 'x')); }},
      {"stop token >= vocab",
       [](v1::GenerateRequest& r) { r.mutable_stop()->add_stop_token_ids(9999); }},
      {"17 stop strings",
       [](v1::GenerateRequest& r) {
         for (int i = 0; i < 17; ++i) r.mutable_stop()->add_stop_strings("x");
       }},
      {"empty stop string", [](v1::GenerateRequest& r) { r.mutable_stop()->add_stop_strings(""); }},
      {"NaN temperature",
       [](v1::GenerateRequest& r) {
         r.mutable_policy()->mutable_sampling()->set_temperature(std::nanf(""));
       }},
      {"top_p 1.5",
       [](v1::GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_top_p(1.5f); }},
      {"top_k 2000",
       [](v1::GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_top_k(2000); }},
      {"branch width 1",
       [](v1::GenerateRequest& r) { r.mutable_policy()->mutable_branch()->set_width(1); }},
      {"branch max_depth 9",
       [](v1::GenerateRequest& r) { r.mutable_policy()->mutable_branch()->set_max_depth(9); }},
      {"unknown mode",
       [](v1::GenerateRequest& r) {
         r.mutable_policy()->set_mode(static_cast<v1::PolicyMode>(99));
       }},
      {"insert token >= vocab",
       [](v1::GenerateRequest& r) { r.mutable_policy()->mutable_insert()->add_tokens(100000); }},
      {"n_samples 0",
       [](v1::GenerateRequest& r) { r.mutable_policy()->mutable_adaptive()->set_n_samples(0); }},
  };
}

class CoordinatorE2eTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = new std::string(TempPath("tiny-model"));
    model::MakeModelOptions options;
    options.out_dir = *model_dir_;
    options.seed = 1;
    ASSERT_TRUE(model::MakeModel(options).ok());
    cluster_ = E2eCluster::Start(*model_dir_, TempPath("shared")).release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    std::filesystem::remove_all(*model_dir_);
    delete model_dir_;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  // Submit and Generate both refuse the request `edit` breaks, as INVALID_ARGUMENT.
  static void ExpectRefused(const char* name, const Edit& edit) {
    v1::GenerateRequest request = TextRequest("fine", 4, 1);
    edit(request);
    grpc::ClientContext submit_context;
    v1::JobRef ref;
    EXPECT_EQ(cluster_->stub->Submit(&submit_context, request, &ref).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << name;
    grpc::ClientContext generate_context;
    grpc::Status status;
    ReadAll(*cluster_->stub->Generate(&generate_context, request), &status);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << name;
  }

  // `score` broken in one field at a time: each is refused as INVALID_ARGUMENT naming the field.
  static void ExpectScoreRefusals(const v1::ScoreRequest& score) {
    for (const auto& [mutate, needle] :
         std::vector<std::pair<std::function<void(v1::ScoreRequest&)>, std::string>>{
             {[](v1::ScoreRequest& r) { r.clear_continuations(); }, "continuations"},
             {[](v1::ScoreRequest& r) {
                r.mutable_continuations(1)->mutable_tokens()->set_token_ids(2, kVocab);
              },
              "continuations[1].tokens.token_ids[2]"},
             {[](v1::ScoreRequest& r) { r.mutable_continuations(0)->set_text(""); },
              "continuations[0].text"},
             {[](v1::ScoreRequest& r) { r.add_continuations(); }, "continuations[2]"},
             {[](v1::ScoreRequest& r) { r.clear_text(); }, "prompt"},
             {[](v1::ScoreRequest& r) { r.set_top_logprobs(65); }, "top_logprobs"},
             {[](v1::ScoreRequest& r) {  // ~4.2 MiB of reply: refused before any work.
                r.set_top_logprobs(64);
                r.clear_continuations();
                for (int c = 0; c < 64; ++c) {
                  auto* ids = r.add_continuations()->mutable_tokens();
                  for (int t = 0; t < 48; ++t) ids->add_token_ids((c + t) % kVocab);
                }
              },
              "continuations: 3072 tokens to score"}}) {
      v1::ScoreRequest bad = score;
      mutate(bad);
      grpc::ClientContext bad_context;
      v1::ScoreResponse ignored;
      const grpc::Status refused = cluster_->stub->Score(&bad_context, bad, &ignored);
      EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << needle;
      EXPECT_NE(refused.error_message().find(needle), std::string::npos) << refused.error_message();
    }
  }

  // The status codes of the job RPCs for `id`.
  static v1::JobRef JobRef(const std::string& id) {
    v1::JobRef ref;
    ref.set_job_id(id);
    return ref;
  }
  static grpc::StatusCode GetJobCode(const std::string& id) {
    grpc::ClientContext context;
    v1::Job job;
    return cluster_->stub->GetJob(&context, JobRef(id), &job).error_code();
  }
  static grpc::StatusCode CancelCode(const std::string& id) {
    grpc::ClientContext context;
    v1::Job job;
    return cluster_->stub->Cancel(&context, JobRef(id), &job).error_code();
  }
  static grpc::StatusCode WatchCode(const std::string& id) {
    grpc::ClientContext context;
    grpc::Status status;
    ReadAll(*cluster_->stub->Watch(&context, JobRef(id)), &status);
    return status.error_code();
  }
  static grpc::StatusCode TreeCode(const std::string& id, int root, int depth) {
    grpc::ClientContext context;
    v1::GetTreeRequest request;
    request.set_job_id(id);
    request.set_root(root);
    request.set_max_depth(depth);
    v1::Tree out;
    return cluster_->stub->GetTree(&context, request, &out).error_code();
  }
  static grpc::StatusCode ListCode(int limit, int state) {
    grpc::ClientContext context;
    v1::ListJobsRequest request;
    request.set_limit(limit);
    if (state != 0) request.add_states(static_cast<v1::JobState>(state));
    v1::ListJobsResponse out;
    return cluster_->stub->ListJobs(&context, request, &out).error_code();
  }

  static std::string* model_dir_;
  static E2eCluster* cluster_;
};
std::string* CoordinatorE2eTest::model_dir_ = nullptr;
E2eCluster* CoordinatorE2eTest::cluster_ = nullptr;

TEST_F(CoordinatorE2eTest, SixteenConcurrentJobsOnTwoWorkersAllFinish) {
  constexpr int kJobs = 16;
  std::vector<std::vector<v1::GenerateEvent>> events(kJobs);
  std::vector<grpc::Status> statuses(kJobs);
  std::vector<std::thread> threads;
  for (int i = 0; i < kJobs; ++i) {
    threads.emplace_back([&, i] {
      grpc::ClientContext context;
      auto reader = cluster_->stub->Generate(
          &context, TextRequest(absl::StrCat("Once upon a time ", i), 32, 100 + i));
      events[i] = ReadAll(*reader, &statuses[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<std::string> workers;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].error_message();
    ASSERT_FALSE(events[i].empty()) << i;
    EXPECT_FALSE(events[i].front().job_id().empty());
    ASSERT_TRUE(EndedAtMaxTokens(events[i], absl::StrCat("job ", i)));
    const v1::Job job = GetJob(*cluster_->stub, events[i].front().job_id());
    EXPECT_EQ(job.usage().generated_tokens(), 32);
    EXPECT_FALSE(job.text().empty());
    workers.insert(job.worker_id());
  }
  EXPECT_EQ(workers.size(), 2u) << "routing should spread 16 jobs over both workers";
}

TEST_F(CoordinatorE2eTest, ScoringAGreedyGenerationReproducesItsSteps) {
  // A job whose thresholds make every step ARGMAX, with alternatives.
  v1::GenerateRequest request = TextRequest("The garden", 12, 5);
  v1::Thresholds* t = request.mutable_policy()->mutable_thresholds();
  t->set_lelv_entropy(64);
  t->set_lelv_varentropy(4096);
  request.set_top_logprobs(3);
  grpc::ClientContext context;
  grpc::Status status;
  const std::vector<v1::GenerateEvent> events =
      ReadAll(*cluster_->stub->Generate(&context, request), &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<v1::TokenEvent> tokens;
  for (const v1::GenerateEvent& event : events) {
    if (event.has_token()) tokens.push_back(event.token());
  }
  ASSERT_EQ(tokens.size(), 12u);

  // Score that continuation, and a second one that differs in its last token.
  v1::ScoreRequest score;
  score.set_text("The garden");
  *score.mutable_policy() = request.policy();  // The strategy reported is this policy's.
  score.set_top_logprobs(3);
  v1::TokenPrompt* same = score.add_continuations()->mutable_tokens();
  for (const v1::TokenEvent& token : tokens) same->add_token_ids(token.token_id());
  v1::TokenPrompt* other = score.add_continuations()->mutable_tokens();
  *other = *same;
  other->set_token_ids(11, (tokens.back().token_id() + 1) % kVocab);
  grpc::ClientContext score_context;
  v1::ScoreResponse scored;
  status = cluster_->stub->Score(&score_context, score, &scored);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(scored.continuations_size(), 2);
  const v1::ScoredContinuation& greedy = scored.continuations(0);
  ASSERT_EQ(greedy.tokens_size(), 12);
  EXPECT_TRUE(greedy.greedy());
  double total = 0;
  for (int i = 0; i < 12; ++i) {
    const v1::ScoredToken& token = greedy.tokens(i);
    EXPECT_EQ(token.token_id(), tokens[i].token_id());
    EXPECT_EQ(token.position(), tokens[i].position());
    EXPECT_EQ(token.rank(), 1);
    EXPECT_NEAR(token.logprob(), tokens[i].logprob(), 1e-4);
    EXPECT_NEAR(token.metrics().entropy(), tokens[i].metrics().entropy(), 1e-4);
    EXPECT_NEAR(token.metrics().attn_entropy(), tokens[i].metrics().attn_entropy(), 1e-4);
    EXPECT_EQ(token.strategy(), v1::STRATEGY_ARGMAX);
    ASSERT_EQ(token.top_logprobs_size(), 3);
    EXPECT_EQ(token.top_logprobs(0).token_id(), token.token_id());
    EXPECT_FALSE(token.text().empty());
    total += token.logprob();
  }
  EXPECT_NEAR(greedy.total_logprob(), total, 1e-4);
  EXPECT_NEAR(greedy.mean_logprob(), total / 12, 1e-5);
  const v1::ScoredContinuation& changed = scored.continuations(1);
  EXPECT_FALSE(changed.greedy());
  EXPECT_GT(changed.tokens(11).rank(), 1);
  EXPECT_LT(changed.total_logprob(), greedy.total_logprob());
  EXPECT_GE(scored.cached_tokens(), 0);
  EXPECT_EQ(cluster_->WaitForUsedBlocks(0), 0) << "scoring sequences were not released";

  ExpectScoreRefusals(score);
}

// The same request with the same seed grows the same tree, node for node, every field a client
// sees (views/tree_diff.h); so does Job.request, the request as the job ran it (`arbor replay`).
TEST_F(CoordinatorE2eTest, SameSeedAndJobRequestReplayTheTree) {
  const std::string first = Submit(*cluster_->stub, TextRequest("The river", 48, 4242));
  Watch(*cluster_->stub, first);
  const v1::Tree tree = GetTree(*cluster_->stub, first);
  ASSERT_GT(tree.nodes_size(), 48);
  const v1::Job job = GetJob(*cluster_->stub, first);
  EXPECT_EQ(job.request().seed(), 4242u);
  EXPECT_EQ(job.request().max_tokens(), 48);
  EXPECT_GT(job.request().tokens().token_ids_size(), 0);
  for (const v1::GenerateRequest& again : {TextRequest("The river", 48, 4242), job.request()}) {
    const std::string id = Submit(*cluster_->stub, again);
    Watch(*cluster_->stub, id);
    const std::optional<views::TreeDifference> difference =
        views::FirstTreeDifference(tree, GetTree(*cluster_->stub, id));
    EXPECT_FALSE(difference.has_value()) << "node " << (difference ? difference->index : 0) << ": "
                                         << (difference ? difference->what : "");
  }
}

TEST_F(CoordinatorE2eTest, CancelMidJobReturnsWorkerKvToBaseline) {
  const int64_t baseline = cluster_->WaitForUsedBlocks(0);
  const std::string id = Submit(*cluster_->stub, TextRequest("A long story", 2000, 9));
  AwaitFirstEvent(*cluster_->stub, id);  // Now the job holds KV on its worker.
  grpc::ClientContext context;
  v1::JobRef ref;
  ref.set_job_id(id);
  v1::Job job;
  ASSERT_TRUE(cluster_->stub->Cancel(&context, ref, &job).ok());
  EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cluster_->WaitForUsedBlocks(baseline), baseline);
}

TEST_F(CoordinatorE2eTest, DeadlineFinishesTheJob) {
  v1::GenerateRequest request = TextRequest("Deadline", 2000, 5);
  request.set_deadline_ms(100);
  const std::vector<v1::GenerateEvent> events =
      Watch(*cluster_->stub, Submit(*cluster_->stub, request));
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events.back().has_finished());
  EXPECT_EQ(events.back().finished().reason(), v1::FINISH_REASON_DEADLINE);

  // The gRPC deadline of Generate bounds the job too.
  const int64_t baseline = cluster_->WaitForUsedBlocks(0);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(150));
  grpc::Status status;
  const std::vector<v1::GenerateEvent> streamed =
      ReadAll(*cluster_->stub->Generate(&context, TextRequest("Deadline", 2000, 6)), &status);
  // The job takes the call's deadline as its own, so either side may end it first: the client's
  // deadline (DEADLINE_EXCEEDED), or the job's, whose finished event closes the stream.
  if (status.ok()) {
    ASSERT_FALSE(streamed.empty());
    ASSERT_TRUE(streamed.back().has_finished());
    EXPECT_EQ(streamed.back().finished().reason(), v1::FINISH_REASON_DEADLINE);
  } else {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  }
  EXPECT_EQ(cluster_->WaitForUsedBlocks(baseline), baseline);
}

TEST_F(CoordinatorE2eTest, InvalidRequestsFailPreciselyAndTheServerStaysHealthy) {
  const std::string real_job = Submit(*cluster_->stub, TextRequest("ok", 4, 1));
  Watch(*cluster_->stub, real_job);
  for (const auto& [name, edit] : BadGenerateRequests()) ExpectRefused(name, edit);

  using grpc::StatusCode;
  EXPECT_EQ(GetJobCode(""), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(GetJobCode(std::string(200, 'j')), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(GetJobCode("no-such-job"), StatusCode::NOT_FOUND);
  EXPECT_EQ(CancelCode("no-such-job"), StatusCode::NOT_FOUND);
  EXPECT_EQ(WatchCode("no-such-job"), StatusCode::NOT_FOUND);
  EXPECT_EQ(WatchCode(""), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(TreeCode("no-such-job", 0, 0), StatusCode::NOT_FOUND);
  EXPECT_EQ(TreeCode(real_job, -1, 0), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(TreeCode(real_job, 0, -1), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(TreeCode(real_job, 99999, 0), StatusCode::NOT_FOUND);
  EXPECT_EQ(ListCode(5000, 0), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ListCode(10, 99), StatusCode::INVALID_ARGUMENT);

  // Still healthy, and still serving jobs.
  EXPECT_TRUE(rpc::CheckServing(cluster_->address, absl::Seconds(5)).value_or(false));
  EXPECT_EQ(GetJobCode(real_job), StatusCode::OK);
  EXPECT_EQ(TreeCode(real_job, 0, 2), StatusCode::OK);
  EXPECT_EQ(ListCode(10, v1::JOB_STATE_FINISHED), StatusCode::OK);
  const std::vector<v1::GenerateEvent> events =
      Watch(*cluster_->stub, Submit(*cluster_->stub, TextRequest("still fine", 4, 2)));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().reason(), v1::FINISH_REASON_MAX_TOKENS);
}

// Its own cluster: one of its workers dies.
TEST_F(CoordinatorE2eTest, KillingAWorkerMidJobRehomesEveryJob) {
  std::unique_ptr<E2eCluster> cluster = E2eCluster::Start(*model_dir_, TempPath("kill"));
  ASSERT_NE(cluster, nullptr);
  const std::vector<std::string> ids = SubmitEightUnderWay(*cluster->stub, "Job ", 50);
  cluster->workers[0].Signal(SIGKILL);
  int rehomed = 0;
  for (const std::string& id : ids) {
    const std::vector<v1::GenerateEvent> events = Watch(*cluster->stub, id);
    ASSERT_TRUE(EndedAtMaxTokens(events, id));
    for (const v1::GenerateEvent& e : events) rehomed += e.has_rehomed();
  }
  EXPECT_GT(rehomed, 0) << "the killed worker held some of the jobs";
}

TEST_F(CoordinatorE2eTest, DrainingAWorkerMidJobMovesItsJobsToTheOther) {
  std::unique_ptr<E2eCluster> cluster = E2eCluster::Start(*model_dir_, TempPath("drain"));
  ASSERT_NE(cluster, nullptr);
  const std::vector<std::string> ids = SubmitEightUnderWay(*cluster->stub, "Drain ", 70);
  const std::string drained = GetJob(*cluster->stub, ids.back()).worker_id();
  ASSERT_FALSE(drained.empty());
  auto admin = v1::Cluster::NewStub(
      grpc::CreateChannel(cluster->address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::DrainWorkerRequest request;
  request.set_worker_id(drained);
  v1::DrainWorkerResponse response;
  const grpc::Status status = admin->DrainWorker(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  int moved = 0;
  for (const std::string& id : ids) {
    ASSERT_TRUE(EndedAtMaxTokens(Watch(*cluster->stub, id), id));
    const v1::Job job = GetJob(*cluster->stub, id);
    if (job.rehomed() > 0) {
      ++moved;
      EXPECT_NE(job.worker_id(), drained) << id;
    }
  }
  EXPECT_GT(moved, 0) << "the drained worker held at least the watched job";
}

}  // namespace
}  // namespace arbor
