// The launcher with a job store (a real SQLite file): a job is recorded before it can run and
// again when it ends, a job the store cannot record is refused, and Resume runs a stored job
// under its id to the same result, or fails it when the model is another; the store's upkeep
// resumes what it is given and applies retention; a job only the store still has replays.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/service/generation_service.h"
#include "coordinator/service/store_upkeep.h"
#include "coordinator/store/open_job_store.h"
#include "coordinator/store/sqlite_database.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rpc/server.h"
#include "tests/coordinator/service/service_harness.h"

namespace arbor::coordinator {
namespace {

using ::google::protobuf::util::MessageDifferencer;

class LauncherStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> next{0};
    path_ = absl::StrCat(::testing::TempDir(), "launcher_store_", getpid(), "_", next++, ".db");
    absl::StatusOr<std::unique_ptr<JobStore>> store =
        OpenJobStore("sqlite:" + path_, {"coordinator-a"});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }

  std::string path_;
  std::unique_ptr<JobStore> store_;
};

TEST_F(LauncherStoreTest, AJobIsRecordedBeforeItRunsAndAgainWhenItEnds) {
  Harness h({}, 10, store_.get());
  h.worker->Hold(true);
  arbor::v1::GenerateRequest request = Harness::Request(4);
  request.set_client_tag("mine");
  request.set_omit_reasoning(true);
  absl::StatusOr<std::shared_ptr<JobRecord>> record =
      h.launcher->Launch(request, absl::InfiniteFuture());
  ASSERT_TRUE(record.ok()) << record.status();
  absl::StatusOr<StoredJob> accepted = store_->Get((*record)->job_id);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_FALSE(accepted->finished.has_value());
  arbor::v1::GenerateRequest expected = (*record)->job->ReplayRequest();
  expected.set_client_tag("mine");
  expected.set_omit_reasoning(true);
  EXPECT_TRUE(MessageDifferencer::Equals(accepted->accepted.request, expected))
      << accepted->accepted.request.DebugString();

  for (int i = 0; i < 50 && !(*record)->events.closed(); ++i) h.worker->ReleaseHeld();
  ASSERT_TRUE((*record)->events.closed());
  absl::StatusOr<StoredJob> finished = store_->Get((*record)->job_id);
  ASSERT_TRUE(finished.ok()) << finished.status();
  ASSERT_TRUE(finished->finished.has_value());
  EXPECT_EQ(finished->finished->job.state(), arbor::v1::JOB_STATE_FINISHED);
  EXPECT_EQ(finished->finished->job.token_ids_size(), 4);
  EXPECT_EQ(finished->finished->events.size(), (*record)->events.events().size());
  EXPECT_GT(finished->finished->tree.nodes_size(), 4);
}

TEST_F(LauncherStoreTest, AJobOnlyTheStoreHasReplaysToTheSameTree) {
  std::string job_id;
  {
    Harness first({}, 10, store_.get());
    first.worker->Hold(true);
    absl::StatusOr<std::shared_ptr<JobRecord>> record =
        first.launcher->Launch(Harness::Request(6), absl::InfiniteFuture());
    ASSERT_TRUE(record.ok()) << record.status();
    for (int i = 0; i < 50 && !(*record)->events.closed(); ++i) first.worker->ReleaseHeld();
    ASSERT_TRUE((*record)->events.closed());
    job_id = (*record)->job_id;
  }
  // A coordinator started afresh on the same store: the job is in no registry now.
  Harness second({}, 10, store_.get());
  GenerationService service(second.launcher.get(), &second.registry, &second.prompts,
                            /*auth=*/nullptr, store_.get());
  absl::StatusOr<std::unique_ptr<rpc::Server>> server =
      rpc::Server::Start("127.0.0.1:0", {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = arbor::v1::Generation::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  arbor::v1::ReplayRequest replay;
  replay.set_job_id(job_id);
  arbor::v1::ReplayResult result;
  grpc::ClientContext context;
  const grpc::Status status = stub->Replay(&context, replay, &result);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(result.job_id(), job_id);
  EXPECT_NE(result.replay_job_id(), job_id);
  EXPECT_TRUE(result.identical()) << result.difference();
  EXPECT_GT(result.nodes(), 6);

  // A policy change is checked against the stored, resolved policy.
  replay.mutable_policy()->mutable_branch()->set_width(1);
  grpc::ClientContext bad_context;
  const grpc::Status bad = stub->Replay(&bad_context, replay, &result);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(bad.error_message(), "policy.branch.width")) << bad.error_message();
}

TEST_F(LauncherStoreTest, AJobTheStoreCannotRecordIsRefused) {
  Harness h({}, 10, store_.get());
  absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(path_);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Query("DROP TABLE arbor_jobs", {}).ok());
  const absl::Status refused =
      h.launcher->Launch(Harness::Request(4), absl::InfiniteFuture()).status();
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.message(), "arbor_jobs")) << refused;
  EXPECT_TRUE(h.registry.List(10, {}).empty()) << "nothing ran";
  EXPECT_EQ(h.registry.admission().active, 0);
}

TEST_F(LauncherStoreTest, ResumeRunsTheStoredRequestUnderItsIdToTheSameEnd) {
  Harness first({}, 10, store_.get());
  absl::StatusOr<std::shared_ptr<JobRecord>> original =
      first.launcher->Launch(Harness::Request(6, 99), absl::InfiniteFuture());
  ASSERT_TRUE(original.ok()) << original.status();
  absl::StatusOr<StoredJob> stored = store_->Get((*original)->job_id);
  ASSERT_TRUE(stored.ok()) << stored.status();

  // As a restarted process finds it: accepted, not finished (under another id here).
  auto stored_unfinished = [](const AcceptedJob& accepted, const std::string& job_id) {
    StoredJob out;
    out.accepted = accepted;
    out.accepted.job_id = job_id;
    return out;
  };
  StoredJob unfinished = stored_unfinished(stored->accepted, "j7-00000001");
  ASSERT_TRUE(store_->Accept(unfinished.accepted).ok());
  Harness second({}, 10, store_.get());
  absl::StatusOr<std::shared_ptr<JobRecord>> resumed = second.launcher->Resume(unfinished);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ((*resumed)->job_id, "j7-00000001");
  EXPECT_EQ((*resumed)->created, unfinished.accepted.created);
  EXPECT_EQ((*resumed)->seed, 99u);
  ASSERT_TRUE((*resumed)->events.closed());
  EXPECT_EQ((*resumed)->job->text(), (*original)->job->text());
  EXPECT_EQ((*resumed)->job->token_ids(), (*original)->job->token_ids());
  absl::StatusOr<StoredJob> ended = store_->Get("j7-00000001");
  ASSERT_TRUE(ended.ok() && ended->finished.has_value()) << ended.status();
  EXPECT_EQ(ended->finished->job.text(), (*original)->job->text());

  unfinished = stored_unfinished(stored->accepted, "j8-00000001");
  unfinished.accepted.model_fingerprint = "another model";
  ASSERT_TRUE(store_->Accept(unfinished.accepted).ok());
  const absl::Status refused = second.launcher->Resume(unfinished).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  absl::StatusOr<StoredJob> failed = store_->Get("j8-00000001");
  ASSERT_TRUE(failed.ok() && failed->finished.has_value()) << failed.status();
  EXPECT_EQ(failed->finished->job.state(), arbor::v1::JOB_STATE_FAILED);
  EXPECT_TRUE(absl::StrContains(failed->finished->job.error(), "another model"));

  // Refused for good now (a limit it no longer fits): failed, saying why, not left to retry.
  unfinished = stored_unfinished(stored->accepted, "j10-00000001");
  unfinished.accepted.request.set_max_tokens(100000);
  ASSERT_TRUE(store_->Accept(unfinished.accepted).ok());
  const absl::Status invalid = second.launcher->Resume(unfinished).status();
  EXPECT_TRUE(absl::IsInvalidArgument(invalid)) << invalid;
  failed = store_->Get("j10-00000001");
  ASSERT_TRUE(failed.ok() && failed->finished.has_value()) << failed.status();
  EXPECT_TRUE(absl::StrContains(failed->finished->job.error(), "max_tokens"))
      << failed->finished->job.error();
}

TEST_F(LauncherStoreTest, UpkeepResumesTheUnfinishedAndAppliesRetention) {
  Harness h({}, 10, store_.get());
  for (uint64_t seed : {1, 2}) {
    ASSERT_TRUE(h.launcher->Launch(Harness::Request(3, seed), absl::InfiniteFuture()).ok());
  }
  absl::StatusOr<std::vector<StoredJob>> finished = store_->List(JobFilter(), false);
  ASSERT_TRUE(finished.ok() && finished->size() == 2u) << finished.status();
  AcceptedJob left = (*finished)[0].accepted;
  left.job_id = "j9-00000001";
  ASSERT_TRUE(store_->Accept(left).ok());
  absl::StatusOr<std::vector<StoredJob>> unfinished = store_->TakeOver(Claim::kLapsedAndOwn);
  ASSERT_TRUE(unfinished.ok() && unfinished->size() == 1u) << unfinished.status();

  StoreUpkeepOptions options;
  options.retention.max_jobs = 1;
  h.clock.Advance(absl::Seconds(1));  // The resumed job ends after the other two.
  {
    StoreUpkeep upkeep(options, store_.get(), h.launcher.get(), &h.registry, &h.clock, *unfinished);
    for (int i = 0; i < 500 && store_->List(JobFilter(), true)->size() != 1; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
  }
  // Resumed first, then pruned to the newest finished job: the resumed one.
  absl::StatusOr<std::vector<StoredJob>> kept = store_->List(JobFilter(), false);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].accepted.job_id, "j9-00000001");
  EXPECT_TRUE((*kept)[0].finished.has_value());
}

}  // namespace
}  // namespace arbor::coordinator
