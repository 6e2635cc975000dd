// The Generation service's own pieces against a worker scripted by metrics
// (../job/scripted_worker.h), in process: the event log (replay then live), the job registry
// (admission limits, the queue, the finished-job LRU) through the real launcher, and the gRPC
// service on a loopback port (Generate, Submit/Watch, Cancel, GetJob, ListJobs, GetTree, errors).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "base/fake_clock.h"
#include "coordinator/cluster/worker_pool.h"
#include "coordinator/job/timer.h"
#include "coordinator/service/event_log.h"
#include "coordinator/service/generation_service.h"
#include "coordinator/service/job_launcher.h"
#include "coordinator/service/job_registry.h"
#include "coordinator/service/prompt.h"
#include "coordinator/service/prompt_snippet.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rpc/server.h"
#include "tests/coordinator/job/scripted_worker.h"
#include "tests/coordinator/service/service_harness.h"

namespace arbor::coordinator {
namespace {

using testing::Lelv;
using testing::ScriptInput;
using testing::ScriptedWorker;

arbor::v1::GenerateEvent TokenEvent(int node) {
  arbor::v1::GenerateEvent event;
  event.mutable_token()->set_node_id(node);
  return event;
}

// Reads a stream of events to its end and returns its status.
grpc::Status ReadToEnd(grpc::ClientReaderInterface<arbor::v1::GenerateEvent>& reader) {
  arbor::v1::GenerateEvent event;
  while (reader.Read(&event)) {
  }
  return reader.Finish();
}

TEST(EventLogTest, ReplaysThenFollowsAndClosesOnFinished) {
  EventLog log;
  log.Append(TokenEvent(1));
  std::vector<int> seen;
  const uint64_t id = log.Subscribe([&](const arbor::v1::GenerateEvent& e) {
    seen.push_back(e.has_finished() ? -1 : e.token().node_id());
  });
  log.Append(TokenEvent(2));
  arbor::v1::GenerateEvent finished;
  finished.mutable_finished();
  log.Append(finished);
  log.Append(TokenEvent(3));  // After the end: ignored.
  EXPECT_EQ(seen, (std::vector<int>{1, 2, -1}));
  EXPECT_TRUE(log.closed());
  log.Unsubscribe(id);
  std::vector<int> replay;
  log.Subscribe([&](const arbor::v1::GenerateEvent& e) { replay.push_back(e.token().node_id()); });
  EXPECT_EQ(replay, (std::vector<int>{1, 2, 0}));
}

TEST(JobRegistryTest, AdmitsQueuesAndRefusesWithTheLimits) {
  JobRegistryOptions options;
  options.admission = {1, 1};
  Harness h(options);
  h.worker->Hold(true);  // Runs complete only when released.
  absl::StatusOr<std::shared_ptr<JobRecord>> first =
      h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture());
  absl::StatusOr<std::shared_ptr<JobRecord>> second =
      h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*first)->job->state(), arbor::v1::JOB_STATE_RUNNING);
  EXPECT_EQ((*second)->job->state(), arbor::v1::JOB_STATE_QUEUED);
  absl::StatusOr<std::shared_ptr<JobRecord>> third =
      h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture());
  ASSERT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(third.status().message(), "1")) << third.status();
  // The first finishes; the queued one takes its slot and finishes too.
  for (int i = 0; i < 20 && !(*second)->events.closed(); ++i) {
    h.worker->ReleaseHeld();
  }
  EXPECT_EQ((*first)->job->state(), arbor::v1::JOB_STATE_FINISHED);
  EXPECT_EQ((*second)->job->state(), arbor::v1::JOB_STATE_FINISHED);
  EXPECT_EQ(h.registry.admission().active, 0);
  EXPECT_TRUE(h.worker->live().empty());
}

TEST(JobRegistryTest, CancelledQueuedJobLeavesTheQueue) {
  JobRegistryOptions options;
  options.admission = {1, 1};
  Harness h(options);
  h.worker->Hold(true);
  auto first = h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture());
  auto second = h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture());
  ASSERT_TRUE(first.ok() && second.ok());
  (*second)->job->Cancel();
  EXPECT_EQ(h.registry.admission().queued, 0);
  EXPECT_TRUE(h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture()).ok());
  (*first)->job->Cancel();
  h.worker->ReleaseHeld();
}

// A coordinator going away destroys its launcher while Runs are still in flight; their
// completions arrive on the worker client's threads later and must not reach it.
TEST(JobLauncherTest, RunsThatCompleteAfterTheLauncherIsGoneReachNothing) {
  Harness h;
  h.worker->Hold(true);
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture());
  ASSERT_TRUE(record.ok()) << record.status();
  const size_t events = (*record)->events.events().size();
  h.launcher.reset();
  for (int i = 0; i < 10; ++i) h.worker->ReleaseHeld();  // The job runs on, unheard.
  EXPECT_EQ((*record)->events.events().size(), events);
  EXPECT_FALSE((*record)->events.closed());
  (*record)->job->Cancel();
}

// Ids name this coordinator process: an id of an earlier one is answered with why it is gone
// (jobs live in memory only), any other unknown id as unknown.
TEST(JobRegistryTest, AnIdOfAnEarlierCoordinatorSaysJobsDoNotOutliveIt) {
  JobRegistry registry{JobRegistryOptions{}};
  const std::string first = registry.NewJobId(), second = registry.NewJobId();
  ASSERT_EQ(first.size(), std::string("j1-").size() + 8) << first;
  EXPECT_EQ(first.substr(0, 3), "j1-");
  EXPECT_EQ(second.substr(0, 3), "j2-");
  EXPECT_EQ(first.substr(3, 4), second.substr(3, 4)) << "one instance per process";
  auto restarted = std::make_unique<JobRegistry>(JobRegistryOptions{});
  while (restarted->NewJobId().substr(3, 4) == first.substr(3, 4)) {
    // Both picked the same instance (1 in 65,536): start another.
    restarted = std::make_unique<JobRegistry>(JobRegistryOptions{});
  }
  const absl::Status gone = restarted->Find(first).status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(gone.message().find("earlier coordinator process"), std::string::npos) << gone;
  for (const std::string& id : {registry.NewJobId(), std::string("j7-zz"), std::string("job")}) {
    const absl::Status unknown = registry.Find(id).status();
    EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
    EXPECT_NE(unknown.message().find("(unknown, or finished and evicted)"), std::string::npos)
        << id << ": " << unknown;
  }
}

TEST(JobRegistryTest, FinishedJobsAreKeptLeastRecentlyUsedFirstOut) {
  JobRegistryOptions options;
  options.finished_jobs = 2;
  Harness h(options);
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    auto record = h.launcher->Launch(Harness::Request(3), absl::InfiniteFuture());
    ASSERT_TRUE(record.ok()) << record.status();
    ASSERT_TRUE((*record)->events.closed());  // The scripted worker answers inline.
    ids.push_back((*record)->job_id);
  }
  ASSERT_TRUE(h.registry.Find(ids[0]).ok());  // Used: ids[1] is now the least recent.
  auto third = h.launcher->Launch(Harness::Request(3), absl::InfiniteFuture());
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(h.registry.Find(ids[0]).ok());
  EXPECT_EQ(h.registry.Find(ids[1]).status().code(), absl::StatusCode::kNotFound);
  std::vector<std::shared_ptr<JobRecord>> listed = h.registry.List(10, {});
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0]->job_id, (*third)->job_id);  // Newest first.
  EXPECT_EQ(h.registry.List(10, {arbor::v1::JOB_STATE_RUNNING}).size(), 0u);
}

// What a finished job retains grows with what its request holds: the prompt and stop strings.
TEST(JobRegistryTest, RetainedBytesCountTheRequest) {
  Harness h;
  auto small = h.launcher->Launch(Harness::Request(3), absl::InfiniteFuture());
  ASSERT_TRUE(small.ok()) << small.status();
  arbor::v1::GenerateRequest big_request = Harness::Request(3);
  for (int i = 0; i < 300; ++i) big_request.mutable_tokens()->add_token_ids(3);
  for (int i = 0; i < 16; ++i) {
    big_request.mutable_stop()->add_stop_strings(std::string(255, static_cast<char>('a' + i)));
  }
  auto big = h.launcher->Launch(big_request, absl::InfiniteFuture());
  ASSERT_TRUE(big.ok()) << big.status();
  ASSERT_TRUE((*big)->events.closed());
  const size_t small_bytes = (*small)->RetainedBytes(), big_bytes = (*big)->RetainedBytes();
  EXPECT_GT(small_bytes, sizeof(JobRecord) + sizeof(Job));
  // The prompt ids (in the spec and in the re-home callback) and the stop strings.
  EXPECT_GE(big_bytes, small_bytes + 300 * sizeof(int32_t) + 16 * 255);
  EXPECT_EQ(h.registry.finished_bytes(), static_cast<int64_t>(small_bytes + big_bytes));
}

TEST(JobRegistryTest, FinishedJobsAreEvictedBeyondTheByteBound) {
  int64_t one = 0;
  {
    Harness probe;
    auto record = probe.launcher->Launch(Harness::Request(3), absl::InfiniteFuture());
    ASSERT_TRUE(record.ok()) << record.status();
    one = probe.registry.finished_bytes();
  }
  JobRegistryOptions options;
  options.finished_job_bytes = one * 5 / 2;  // Room for two such jobs, not three.
  Harness h(options);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto record = h.launcher->Launch(Harness::Request(3), absl::InfiniteFuture());
    ASSERT_TRUE(record.ok()) << record.status();
    ids.push_back((*record)->job_id);
  }
  EXPECT_EQ(h.registry.finished_count(), 2);
  EXPECT_LE(h.registry.finished_bytes(), options.finished_job_bytes);
  EXPECT_EQ(h.registry.Find(ids[0]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(h.registry.Find(ids[2]).ok());

  JobRegistryOptions tight;
  tight.finished_job_bytes = one / 2;  // A job larger than the bound alone is not kept.
  Harness t(tight);
  auto record = t.launcher->Launch(Harness::Request(3), absl::InfiniteFuture());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(t.registry.finished_count(), 0);
  EXPECT_EQ(t.registry.finished_bytes(), 0);
  EXPECT_EQ(t.registry.Find((*record)->job_id).status().code(), absl::StatusCode::kNotFound);
}

// A tenant at its jobs= limit is refused before its job exists; every end gives the share back:
// a finish, a cancel (running or queued), an admission refusal after the check, a failure.
TEST(JobLauncherTest, TenantJobsLimitIsHeldUntilEachJobEnds) {
  JobRegistryOptions options;
  options.admission = {2, 1};
  Harness h(options);
  h.worker->Hold(true);
  const rpc::Identity alice{"alice", rpc::Role::kUser, {2, 0}}, bob{"bob", rpc::Role::kUser, {}};
  auto launch = [&h](const rpc::Identity& who) {
    return h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture(), who);
  };
  auto first = launch(alice), queued = launch(bob);
  ASSERT_TRUE(first.ok() && queued.ok());
  auto second = launch(alice);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->job->state(), arbor::v1::JOB_STATE_QUEUED);
  const absl::Status refused = launch(alice).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(refused.message(), "'alice' is at its limit of jobs: 2 in flight"))
      << refused;
  EXPECT_EQ(h.registry.List(10, {}).size(), 3u) << "the refused request made no job";
  (*second)->job->Cancel();  // Queued.
  auto third = launch(alice);
  ASSERT_TRUE(third.ok()) << third.status();
  (*third)->job->Cancel();
  ASSERT_TRUE(launch(bob).ok()) << "bob fills the queue";
  for (int i = 0; i < 2; ++i) {  // The second finds alice's room: the first gave its share back.
    const absl::Status full = launch(alice).status();
    EXPECT_TRUE(absl::StrContains(full.message(), "max_queued_jobs")) << full;
  }
  for (int i = 0; i < 50 && h.registry.admission().active > 0; ++i) h.worker->ReleaseHeld();
  ASSERT_EQ(h.registry.admission().active, 0);
  const arbor::v1::WorkerInfo info = h.pool.Get("w0")->info;
  h.worker->Hold(false);
  h.worker->FailNext(absl::UnavailableError("worker gone"), 100);
  auto failing = launch(alice);
  ASSERT_TRUE(failing.ok()) << failing.status();
  EXPECT_EQ((*failing)->job->state(), arbor::v1::JOB_STATE_FAILED);
  ASSERT_TRUE(h.pool.Register("127.0.0.1:1", info).ok());  // Back, for the next two.
  h.worker->FailNext(absl::OkStatus(), 0);
  h.worker->Hold(true);
  EXPECT_TRUE(launch(alice).ok() && launch(alice).ok()) << "finished and failed jobs hold none";
  h.worker->Hold(false);
  h.worker->ReleaseHeld();
}

// A job's rows are its policy's width: a SEARCH job of width 4 takes 4 of rows=6, a CANONICAL
// one 1; a policy wider than the limit itself can never run and says so.
TEST(JobLauncherTest, TenantRowsLimitCountsThePolicysWidth) {
  Harness h;
  h.worker->Hold(true);
  const rpc::Identity alice{"alice", rpc::Role::kUser, {0, 6}};
  arbor::v1::GenerateRequest search = Harness::Request(4);
  search.mutable_policy()->set_mode(arbor::v1::POLICY_MODE_SEARCH);
  search.mutable_policy()->mutable_branch()->set_width(4);
  arbor::v1::GenerateRequest canonical = Harness::Request(4);
  canonical.mutable_policy()->set_mode(arbor::v1::POLICY_MODE_CANONICAL);
  ASSERT_TRUE(h.launcher->Launch(search, absl::InfiniteFuture(), alice).ok());
  const absl::Status refused = h.launcher->Launch(search, absl::InfiniteFuture(), alice).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(refused.message(), "rows: 4 in flight of rows=6")) << refused;
  EXPECT_TRUE(h.launcher->Launch(canonical, absl::InfiniteFuture(), alice).ok());
  // 5 of 6 rows in flight: a request of one more choice fits, one of two does not.
  EXPECT_TRUE(h.launcher->CheckTenantRoom(alice, {canonical}).ok());
  const std::vector<arbor::v1::GenerateRequest> two = {canonical, canonical};
  EXPECT_EQ(h.launcher->CheckTenantRoom(alice, two).code(), absl::StatusCode::kResourceExhausted);
  search.mutable_policy()->mutable_branch()->set_width(8);
  EXPECT_EQ(h.launcher->Launch(search, absl::InfiniteFuture(), alice).status().code(),
            absl::StatusCode::kInvalidArgument);
  h.registry.CancelAll();
  h.worker->Hold(false);
  h.worker->ReleaseHeld();
}

TEST(JobLauncherTest, RefusesPromptsItCannotServe) {
  Harness h;
  arbor::v1::GenerateRequest text;
  text.set_text("hello");
  EXPECT_EQ(h.launcher->Launch(text, absl::InfiniteFuture()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  arbor::v1::GenerateRequest too_long = Harness::Request(511);
  EXPECT_EQ(h.launcher->Launch(too_long, absl::InfiniteFuture()).status().code(),
            absl::StatusCode::kInvalidArgument);
  arbor::v1::GenerateRequest wide = Harness::Request(4);
  wide.set_top_logprobs(64);
  wide.mutable_policy()->mutable_insert()->set_max_per_job(2);  // No tokens, no tokenizer.
  absl::Status status = h.launcher->Launch(wide, absl::InfiniteFuture()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "policy.insert.tokens")) << status;
}

TEST(PromptSnippetTest, ShowsTheQuestionOnOneLineCutToItsWidth) {
  arbor::v1::GenerateRequest chat;
  for (const auto& [role, content] : std::vector<std::pair<std::string, std::string>>{
           {"system", "You are terse."}, {"user", "first"}, {"assistant", "ok"},
           {"user", "  Name\n\n three\tcolours  "}, {"assistant", ""}}) {
    arbor::v1::ChatMessage* message = chat.mutable_chat()->add_messages();
    message->set_role(role);
    message->set_content(content);
  }
  EXPECT_EQ(PromptSnippet(chat), "Name three colours");

  arbor::v1::GenerateRequest system_only;
  system_only.mutable_chat()->add_messages()->set_content("only a system message");
  EXPECT_EQ(PromptSnippet(system_only), "only a system message");

  // Cut at a character, "…" in the last column; each of these takes two columns.
  arbor::v1::GenerateRequest wide;
  std::string text;
  for (int i = 0; i < 300; ++i) text += "木";
  wide.set_text(text);
  std::string want;
  for (int i = 0; i < (kPromptSnippetWidth - 1) / 2; ++i) want += "木";
  EXPECT_EQ(PromptSnippet(wide), want + "…");

  arbor::v1::GenerateRequest tokens = Harness::Request(4);
  EXPECT_EQ(PromptSnippet(tokens), "");
}

// The gRPC service on a loopback port over the harness.
struct ServiceHarness : Harness {
  using Harness::Harness;
  void Start() {
    service = std::make_unique<GenerationService>(launcher.get(), &registry, &prompts);
    auto started = rpc::Server::Start("127.0.0.1:0", {service.get()});
    ASSERT_TRUE(started.ok()) << started.status();
    server = *std::move(started);
    stub = arbor::v1::Generation::NewStub(
        grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  }
  std::vector<arbor::v1::GenerateEvent> Read(
      grpc::ClientReaderInterface<arbor::v1::GenerateEvent>& reader) {
    std::vector<arbor::v1::GenerateEvent> events;
    arbor::v1::GenerateEvent event;
    while (reader.Read(&event)) events.push_back(event);
    return events;
  }
  std::unique_ptr<GenerationService> service;
  std::unique_ptr<rpc::Server> server;
  std::unique_ptr<arbor::v1::Generation::Stub> stub;
};

TEST(JobLauncherTest, DrainingAWorkerMovesItsJobsToAnother) {
  Harness h;
  auto spare = std::make_shared<ScriptedWorker>(
      "w1",
      [](const ScriptInput&) {
        return Lelv({{10, 0.9}, {11, 0.1}});
      },
      std::vector<int32_t>{kEos});
  LauncherOptions options;
  options.job.steps_per_run = 2;  // The job is mid-way when w0 drains.
  JobLauncher launcher(options, &h.pool, &h.registry, &h.prompts, &h.clock, &h.timer,
                       [&](const WorkerHandle& handle) -> std::shared_ptr<WorkerClient> {
                         return handle.worker_id == "w1" ? spare : h.worker;
                       });
  h.worker->Hold(true);
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      launcher.Launch(Harness::Request(6), absl::InfiniteFuture());
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_EQ((*record)->job->worker_id(), "w0");
  ASSERT_TRUE(h.pool.Register("127.0.0.1:2", Harness::Worker("w1")).ok());

  ASSERT_TRUE(h.pool.Drain("w0").ok());
  h.worker->ReleaseHeld();  // The Run in flight completes; then the job moves.
  EXPECT_TRUE((*record)->events.closed());
  const arbor::v1::Job job = (*record)->ToProto(/*brief=*/true);
  EXPECT_EQ(job.state(), arbor::v1::JOB_STATE_FINISHED) << job.error();
  EXPECT_EQ(job.worker_id(), "w1");
  EXPECT_EQ(job.rehomed(), 1);
  EXPECT_EQ(job.usage().generated_tokens(), 6);
  EXPECT_TRUE(h.worker->live().empty());
  EXPECT_TRUE(spare->live().empty());
}

TEST(GenerationServiceTest, GenerateStreamsUntilFinishedAndWatchReplays) {
  ServiceHarness h;
  h.Start();
  grpc::ClientContext context;
  auto reader = h.stub->Generate(&context, Harness::Request(5));
  std::vector<arbor::v1::GenerateEvent> events = h.Read(*reader);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_GE(events.size(), 2u);
  const std::string job_id = events.front().job_id();
  EXPECT_FALSE(job_id.empty());
  ASSERT_TRUE(events.back().has_finished());
  EXPECT_EQ(events.back().finished().reason(), arbor::v1::FINISH_REASON_MAX_TOKENS);
  EXPECT_EQ(events.back().finished().usage().generated_tokens(), 5);

  grpc::ClientContext watch_context;
  arbor::v1::JobRef ref;
  ref.set_job_id(job_id);
  auto watch = h.stub->Watch(&watch_context, ref);
  std::vector<arbor::v1::GenerateEvent> replay = h.Read(*watch);
  ASSERT_TRUE(watch->Finish().ok());
  ASSERT_EQ(replay.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(replay[i].SerializeAsString(), events[i].SerializeAsString()) << i;
  }

  grpc::ClientContext job_context;
  arbor::v1::Job job;
  ASSERT_TRUE(h.stub->GetJob(&job_context, ref, &job).ok());
  EXPECT_EQ(job.state(), arbor::v1::JOB_STATE_FINISHED);
  EXPECT_EQ(job.token_ids_size(), 5);
  EXPECT_EQ(job.seed(), 7u);
  // The policy as resolved: every threshold set, the defaults where the request set none.
  ASSERT_TRUE(job.policy().thresholds().has_hehv_entropy());
  EXPECT_FLOAT_EQ(job.policy().thresholds().hehv_entropy(), 3.0f);

  grpc::ClientContext tree_context;
  arbor::v1::GetTreeRequest tree_request;
  tree_request.set_job_id(job_id);
  arbor::v1::Tree tree;
  ASSERT_TRUE(h.stub->GetTree(&tree_context, tree_request, &tree).ok());
  EXPECT_EQ(tree.nodes_size(), 6);  // The prompt node and five committed tokens.
  EXPECT_EQ(tree.prompt_token_ids_size(), 2);

  grpc::ClientContext list_context;
  arbor::v1::ListJobsResponse list;
  ASSERT_TRUE(h.stub->ListJobs(&list_context, {}, &list).ok());
  ASSERT_EQ(list.jobs_size(), 1);
  EXPECT_EQ(list.jobs(0).token_ids_size(), 0);  // Brief.
  EXPECT_FALSE(list.jobs(0).has_policy());

  // The tag filter matches the whole tag only.
  for (const auto& [tag, jobs] : std::vector<std::pair<std::string, int>>{{"", 1}, {"x", 0}}) {
    grpc::ClientContext tagged_context;
    arbor::v1::ListJobsRequest tagged;
    tagged.set_client_tag(tag);
    ASSERT_TRUE(h.stub->ListJobs(&tagged_context, tagged, &list).ok());
    EXPECT_EQ(list.jobs_size(), jobs) << tag;
  }
}

TEST(GenerationServiceTest, TreeCarriesTheAlternativesTheJobAskedFor) {
  ServiceHarness h;
  h.Start();
  for (const int top : {0, 1}) {  // The scripted worker has two candidates a step.
    arbor::v1::GenerateRequest request = Harness::Request(4);
    request.set_top_logprobs(top);
    grpc::ClientContext context;
    auto reader = h.stub->Generate(&context, request);
    const std::vector<arbor::v1::GenerateEvent> events = h.Read(*reader);
    ASSERT_TRUE(reader->Finish().ok());
    grpc::ClientContext tree_context;
    arbor::v1::GetTreeRequest tree_request;
    tree_request.set_job_id(events.front().job_id());
    tree_request.set_include_top_logprobs(true);
    arbor::v1::Tree tree;
    ASSERT_TRUE(h.stub->GetTree(&tree_context, tree_request, &tree).ok());
    ASSERT_EQ(tree.nodes_size(), 5);
    // The worker returns all it has (the tree keeps them for BACKSPACE); the export shows
    // what the request asked for.
    for (int i = 1; i < tree.nodes_size(); ++i) {
      EXPECT_EQ(tree.nodes(i).top_logprobs_size(), top) << i;
    }
  }
}

TEST(GenerationServiceTest, ErrorsNameTheProblem) {
  ServiceHarness h;
  h.Start();
  struct Case {
    const char* name;
    std::function<grpc::Status()> call;
    grpc::StatusCode code;
  };
  arbor::v1::JobRef unknown;
  unknown.set_job_id("nope");
  arbor::v1::GetTreeRequest bad_root;
  bad_root.set_job_id("nope");
  bad_root.set_root(-1);
  const std::vector<Case> cases = {
      {"watch unknown",
       [&] {
         grpc::ClientContext c;
         return ReadToEnd(*h.stub->Watch(&c, unknown));
       },
       grpc::StatusCode::NOT_FOUND},
      {"get unknown",
       [&] {
         grpc::ClientContext c;
         arbor::v1::Job j;
         return h.stub->GetJob(&c, unknown, &j);
       },
       grpc::StatusCode::NOT_FOUND},
      {"cancel empty id",
       [&] {
         grpc::ClientContext c;
         arbor::v1::Job j;
         return h.stub->Cancel(&c, {}, &j);
       },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"tree negative root",
       [&] {
         grpc::ClientContext c;
         arbor::v1::Tree t;
         return h.stub->GetTree(&c, bad_root, &t);
       },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"generate without prompt",
       [&] {
         grpc::ClientContext c;
         return ReadToEnd(*h.stub->Generate(&c, {}));
       },
       grpc::StatusCode::INVALID_ARGUMENT},
  };
  for (const Case& c : cases) EXPECT_EQ(c.call().error_code(), c.code) << c.name;
}

TEST(GenerationServiceTest, CancellingGenerateCancelsTheJobAndReleasesItsSequences) {
  ServiceHarness h;
  h.Start();
  h.worker->Hold(true);
  grpc::ClientContext context;
  auto reader = h.stub->Generate(&context, Harness::Request(50));
  // Wait until the job exists and its first Run is held on the worker.
  std::vector<std::shared_ptr<JobRecord>> jobs;
  for (int i = 0; i < 200 && h.worker->requests().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  jobs = h.registry.List(10, {});
  ASSERT_EQ(jobs.size(), 1u);
  context.TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  for (int i = 0; i < 200 && jobs[0]->job->state() == arbor::v1::JOB_STATE_RUNNING; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(jobs[0]->job->state(), arbor::v1::JOB_STATE_CANCELLED);
  h.worker->ReleaseHeld();  // The held Run completes; what it created is released.
  EXPECT_TRUE(h.worker->live().empty());
}

TEST(GenerationServiceTest, SubmitRunsDetachedAndCancelStopsIt) {
  ServiceHarness h;
  h.Start();
  h.worker->Hold(true);
  grpc::ClientContext context;
  arbor::v1::JobRef ref;
  ASSERT_TRUE(h.stub->Submit(&context, Harness::Request(50), &ref).ok());
  grpc::ClientContext cancel_context;
  arbor::v1::Job job;
  ASSERT_TRUE(h.stub->Cancel(&cancel_context, ref, &job).ok());
  EXPECT_EQ(job.state(), arbor::v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(job.finish_reason(), arbor::v1::FINISH_REASON_CANCELLED);
  h.worker->ReleaseHeld();
  EXPECT_TRUE(h.worker->live().empty());
}

}  // namespace
}  // namespace arbor::coordinator
