// The job store's contract, run against each back end: a real SQLite file and a real PostgreSQL
// server started for the test (skipped, saying so, where the postgresql package is absent).
#include "coordinator/store/job_store.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "coordinator/store/open_job_store.h"
#include "coordinator/store/sql_job_store.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/coordinator/store/job_store_fixtures.h"

namespace arbor::coordinator {
namespace {

using ::google::protobuf::util::MessageDifferencer;

template <typename Backend>
class JobStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Backend::SetUpTestSuite(); }
  static void TearDownTestSuite() { Backend::TearDownTestSuite(); }

  void SetUp() override {
    if (absl::Status reset = backend_.Reset(); absl::IsNotFound(reset)) {
      GTEST_SKIP() << kNoPostgres;
    } else {
      ASSERT_TRUE(reset.ok()) << reset;
    }
    store_ = Open();
  }

  std::unique_ptr<JobStore> Open() {
    absl::StatusOr<std::unique_ptr<JobStore>> store =
        OpenJobStore(backend_.Spec(), {"coordinator-a"});
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  std::vector<std::string> Ids(const JobFilter& filter) {
    absl::StatusOr<std::vector<StoredJob>> jobs = store_->List(filter, /*brief=*/true);
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    std::vector<std::string> ids;
    for (const StoredJob& job : jobs.value_or(std::vector<StoredJob>{})) {
      ids.push_back(job.accepted.job_id);
    }
    return ids;
  }

  Backend backend_;
  std::unique_ptr<JobStore> store_;
};

TYPED_TEST_SUITE(JobStoreTest, Backends, BackendNames);

TYPED_TEST(JobStoreTest, AcceptedJobReadsBackUnfinishedAfterReopening) {
  AcceptedJob job = Accepted("j1-00000001", 1000);
  job.deadline = absl::FromUnixMillis(5000);
  ASSERT_TRUE(this->store_->Accept(job).ok());
  this->store_ = this->Open();  // A new connection: what a restarted coordinator sees.
  absl::StatusOr<StoredJob> got = this->store_->Get("j1-00000001");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->finished.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(got->accepted.request, job.request));
  EXPECT_EQ(got->accepted.owner, "alice");
  EXPECT_EQ(got->accepted.model_fingerprint, job.model_fingerprint);
  EXPECT_EQ(got->accepted.created, job.created);
  EXPECT_EQ(got->accepted.deadline, job.deadline);
  absl::StatusOr<std::vector<StoredJob>> unfinished = this->store_->TakeOver(Claim::kLapsedAndOwn);
  ASSERT_TRUE(unfinished.ok()) << unfinished.status();
  ASSERT_EQ(unfinished->size(), 1u);
  EXPECT_EQ((*unfinished)[0].accepted.deadline, absl::FromUnixMillis(5000));
}

TYPED_TEST(JobStoreTest, KnownIdIsRefusedAndUnknownIsNotFound) {
  ASSERT_TRUE(this->store_->Accept(Accepted("j1-00000001", 1000)).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(this->store_->Accept(Accepted("j1-00000001", 2000))));
  EXPECT_TRUE(absl::IsNotFound(this->store_->Get("j2-00000001").status()));
  EXPECT_TRUE(absl::IsNotFound(this->store_->Finish(
      "j2-00000001", Finished("j2-00000001", arbor::v1::JOB_STATE_FINISHED, 3000))));
}

TYPED_TEST(JobStoreTest, FinishedJobKeepsJobEventsAndTree) {
  ASSERT_TRUE(this->store_->Accept(Accepted("j1-00000001", 1000)).ok());
  const FinishedJob finished = Finished("j1-00000001", arbor::v1::JOB_STATE_FINISHED, 2000);
  ASSERT_TRUE(this->store_->Finish("j1-00000001", finished).ok());
  absl::StatusOr<StoredJob> got = this->store_->Get("j1-00000001");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->finished.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(got->finished->job, finished.job));
  EXPECT_TRUE(MessageDifferencer::Equals(got->finished->tree, finished.tree));
  ASSERT_EQ(got->finished->events.size(), finished.events.size());
  for (size_t i = 0; i < finished.events.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(got->finished->events[i], finished.events[i])) << i;
  }
  absl::StatusOr<std::vector<StoredJob>> unfinished = this->store_->TakeOver(Claim::kLapsedAndOwn);
  ASSERT_TRUE(unfinished.ok());
  EXPECT_TRUE(unfinished->empty());
  // A brief listing leaves the events and the tree out, and keeps the job.
  absl::StatusOr<std::vector<StoredJob>> brief = this->store_->List(JobFilter(), true);
  ASSERT_TRUE(brief.ok());
  ASSERT_EQ(brief->size(), 1u);
  EXPECT_TRUE((*brief)[0].finished->events.empty());
  EXPECT_EQ((*brief)[0].finished->tree.nodes_size(), 0);
  EXPECT_EQ((*brief)[0].finished->job.text(), "hello");
}

TYPED_TEST(JobStoreTest, ListFiltersAndOrdersNewestFirst) {
  AcceptedJob a = Accepted("j1-00000001", 1000);
  AcceptedJob b = Accepted("j2-00000001", 2000);
  b.owner = "bob";
  b.model = "smollm2";
  AcceptedJob c = Accepted("j3-00000001", 3000);
  c.client_tag = "other";
  for (const AcceptedJob& job : {a, b, c}) ASSERT_TRUE(this->store_->Accept(job).ok());
  ASSERT_TRUE(
      this->store_
          ->Finish("j2-00000001", Finished("j2-00000001", arbor::v1::JOB_STATE_CANCELLED, 2500))
          .ok());
  using Ids = std::vector<std::string>;
  EXPECT_EQ(this->Ids(JobFilter()), (Ids{"j3-00000001", "j2-00000001", "j1-00000001"}));
  JobFilter filter;
  filter.states = {arbor::v1::JOB_STATE_CANCELLED};
  EXPECT_EQ(this->Ids(filter), Ids{"j2-00000001"});
  filter.states = {arbor::v1::JOB_STATE_QUEUED, arbor::v1::JOB_STATE_FINISHED};
  EXPECT_EQ(this->Ids(filter), (Ids{"j3-00000001", "j1-00000001"}));
  filter = JobFilter();
  filter.owner = "bob";
  EXPECT_EQ(this->Ids(filter), Ids{"j2-00000001"});
  filter = JobFilter();
  filter.model = "tiny";
  filter.client_tag = "tag";
  EXPECT_EQ(this->Ids(filter), Ids{"j1-00000001"});
  filter = JobFilter();
  filter.created_after = absl::FromUnixMillis(2000);
  filter.created_before = absl::FromUnixMillis(3000);
  EXPECT_EQ(this->Ids(filter), Ids{"j2-00000001"});
  filter = JobFilter();
  filter.limit = 1;
  EXPECT_EQ(this->Ids(filter), Ids{"j3-00000001"});
}

TYPED_TEST(JobStoreTest, RetentionDropsOldestFinishedAndNeverUnfinished) {
  for (int i = 1; i <= 5; ++i) {
    const std::string id = absl::StrCat("j", i, "-00000001");
    ASSERT_TRUE(this->store_->Accept(Accepted(id, i * 1000)).ok());
    if (i <= 4) {
      ASSERT_TRUE(
          this->store_->Finish(id, Finished(id, arbor::v1::JOB_STATE_FINISHED, i * 1000 + 500))
              .ok());
    }
  }
  using Ids = std::vector<std::string>;
  JobRetention retention;
  retention.max_age = absl::Milliseconds(3000);  // At 5000: finished before 2000 go.
  EXPECT_EQ(this->store_->Prune(retention, absl::FromUnixMillis(5000)).value_or(-1), 1);
  retention = JobRetention();
  retention.max_jobs = 2;
  EXPECT_EQ(this->store_->Prune(retention, absl::FromUnixMillis(5000)).value_or(-1), 1);
  EXPECT_EQ(this->Ids(JobFilter()), (Ids{"j5-00000001", "j4-00000001", "j3-00000001"}));
  // Each finished row holds 150 to 250 bytes: a bound of 300 keeps only the newest.
  retention = JobRetention();
  retention.max_bytes = 300;
  EXPECT_EQ(this->store_->Prune(retention, absl::FromUnixMillis(5000)).value_or(-1), 1);
  EXPECT_EQ(this->Ids(JobFilter()), (Ids{"j5-00000001", "j4-00000001"}));
  retention.max_bytes = 0;
  EXPECT_EQ(this->store_->Prune(retention, absl::FromUnixMillis(5000)).value_or(-1), 1);
  EXPECT_EQ(this->Ids(JobFilter()), Ids{"j5-00000001"});  // Unfinished: kept.
}

TYPED_TEST(JobStoreTest, ForgetRemovesAcceptedJob) {
  ASSERT_TRUE(this->store_->Accept(Accepted("j1-00000001", 1000)).ok());
  ASSERT_TRUE(this->store_->Forget("j1-00000001").ok());
  EXPECT_TRUE(absl::IsNotFound(this->store_->Get("j1-00000001").status()));
}

TYPED_TEST(JobStoreTest, DamagedRowIsDataLossAndKept) {
  ASSERT_TRUE(this->store_->Accept(Accepted("j1-00000001", 1000)).ok());
  ASSERT_TRUE(this->store_->Accept(Accepted("j2-00000001", 2000)).ok());
  absl::StatusOr<std::unique_ptr<SqlDatabase>> db = this->backend_.Connect();
  ASSERT_TRUE(db.ok()) << db.status();
  const SqlValue params[] = {SqlBlob{"\xff\xff\xff"}, std::string("j1-00000001")};
  ASSERT_TRUE((*db)->Query("UPDATE arbor_jobs SET request = $1 WHERE job_id = $2", params).ok());
  absl::StatusOr<StoredJob> got = this->store_->Get("j1-00000001");
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_NE(got.status().message().find("j1-00000001"), std::string::npos) << got.status();
  EXPECT_TRUE(this->store_->Get("j2-00000001").ok());  // The others still read.
}

TEST(OpenJobStoreTest, NoneIsNoStoreAndUnknownKindIsRefused) {
  absl::StatusOr<std::unique_ptr<JobStore>> none = OpenJobStore("none", {"coordinator-a"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(OpenJobStore("mysql:x", {"coordinator-a"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(OpenJobStore("sqlite:", {"coordinator-a"}).status()));
}

TEST(OpenJobStoreTest, FileThatIsNotADatabaseIsRefusedAndLeftAlone) {
  const std::string path = absl::StrCat(::testing::TempDir(), "not_a_db_", getpid(), ".txt");
  const std::string text(4096, 'z');
  std::ofstream(path) << text;
  absl::StatusOr<std::unique_ptr<JobStore>> store =
      OpenJobStore("sqlite:" + path, {"coordinator-a"});
  EXPECT_TRUE(absl::IsUnavailable(store.status())) << store.status();
  EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status();
  std::ifstream in(path);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, text);
  std::remove(path.c_str());
}

TEST(OpenJobStoreTest, UnreachablePostgresIsUnavailable) {
  const absl::StatusOr<std::unique_ptr<JobStore>> store = OpenJobStore(
      "postgres:host=/nonexistent-arbor-dir port=1 connect_timeout=2", {"coordinator-a"});
  EXPECT_TRUE(absl::IsUnavailable(store.status())) << store.status();
}

}  // namespace
}  // namespace arbor::coordinator
