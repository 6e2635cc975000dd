// The job store's ownership contract, run against each back end (a real SQLite file and a real
// PostgreSQL server): a job is held by the coordinator that accepted it under a lease it renews;
// another takes it over only once the lease lapsed, one coordinator per job however many try at
// once; each takeover raises the epoch, and a replaced holder can write the job no more. Time is
// a fake clock shared by the coordinators, so leases lapse when the test says.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/fake_clock.h"
#include "coordinator/store/job_store.h"
#include "coordinator/store/open_job_store.h"
#include "gtest/gtest.h"
#include "tests/coordinator/store/job_store_fixtures.h"

namespace arbor::coordinator {
namespace {

constexpr absl::Duration kLease = absl::Seconds(10);

template <typename Backend>
class JobLeaseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Backend::SetUpTestSuite(); }
  static void TearDownTestSuite() { Backend::TearDownTestSuite(); }

  void SetUp() override {
    if (absl::Status reset = backend_.Reset(); absl::IsNotFound(reset)) {
      GTEST_SKIP() << kNoPostgres;
    } else {
      ASSERT_TRUE(reset.ok()) << reset;
    }
  }

  // A coordinator's view of the store: its own connection, under its id.
  std::unique_ptr<JobStore> Open(const std::string& coordinator) {
    absl::StatusOr<std::unique_ptr<JobStore>> store =
        OpenJobStore(backend_.Spec(), {coordinator, kLease, &clock_});
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  static std::vector<std::string> Ids(const absl::StatusOr<std::vector<StoredJob>>& jobs) {
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    std::vector<std::string> ids;
    for (const StoredJob& job : jobs.value_or(std::vector<StoredJob>{})) {
      ids.push_back(job.accepted.job_id);
    }
    return ids;
  }

  Backend backend_;
  base::FakeClock clock_;
};

TYPED_TEST_SUITE(JobLeaseTest, Backends, BackendNames);

using Ids = std::vector<std::string>;

TYPED_TEST(JobLeaseTest, ARenewedLeaseIsNeverTakenAndALapsedOneIsTakenOnce) {
  std::unique_ptr<JobStore> a = this->Open("a");
  std::unique_ptr<JobStore> b = this->Open("b");
  ASSERT_TRUE(a->Accept(Accepted("j1-00000001", 1000)).ok());
  absl::StatusOr<StoredJob> stored = b->Get("j1-00000001");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->lease.coordinator, "a");
  EXPECT_EQ(stored->lease.epoch, 1);
  EXPECT_EQ(stored->lease.until, this->clock_.Now() + kLease);
  // Renewed every 0.8 lease, a's lease never lapses however long the job runs.
  for (int i = 0; i < 3; ++i) {
    this->clock_.Advance(kLease * 0.8);
    absl::StatusOr<LeaseRenewal> renewed = a->Renew();
    ASSERT_TRUE(renewed.ok()) << renewed.status();
    EXPECT_TRUE(renewed->lost.empty());
    EXPECT_EQ(this->Ids(b->TakeOver(Claim::kLapsed)), Ids{});
    EXPECT_EQ(this->Ids(b->TakeOver(Claim::kLapsedAndOwn)), Ids{});
  }
  this->clock_.Advance(kLease);  // a stops renewing (dead, or paused).
  absl::StatusOr<std::vector<StoredJob>> taken = b->TakeOver(Claim::kLapsed);
  ASSERT_EQ(this->Ids(taken), Ids{"j1-00000001"});
  EXPECT_EQ((*taken)[0].lease.coordinator, "b");
  EXPECT_EQ((*taken)[0].lease.epoch, 2);
  EXPECT_EQ((*taken)[0].lease.until, this->clock_.Now() + kLease);
  EXPECT_EQ(this->Ids(this->Open("c")->TakeOver(Claim::kLapsed)), Ids{});  // b's now.
}

TYPED_TEST(JobLeaseTest, AReplacedHolderIsFencedAndLearnsItLostTheJob) {
  std::unique_ptr<JobStore> a = this->Open("a");
  std::unique_ptr<JobStore> b = this->Open("b");
  ASSERT_TRUE(a->Accept(Accepted("j1-00000001", 1000)).ok());
  ASSERT_TRUE(a->Accept(Accepted("j2-00000001", 2000)).ok());
  this->clock_.Advance(kLease + absl::Milliseconds(1));
  ASSERT_EQ(this->Ids(b->TakeOver(Claim::kLapsed)), (Ids{"j1-00000001", "j2-00000001"}));
  EXPECT_TRUE(b->Holds("j1-00000001"));
  EXPECT_TRUE(a->Holds("j1-00000001"));  // a does not know yet.
  // a wakes up: its result for j1 is refused, naming the holder, and the row is b's still.
  const absl::Status fenced =
      a->Finish("j1-00000001", Finished("j1-00000001", arbor::v1::JOB_STATE_FINISHED, 3000));
  EXPECT_TRUE(absl::IsAborted(fenced)) << fenced;
  EXPECT_NE(fenced.message().find("coordinator b's at epoch 2"), std::string::npos) << fenced;
  absl::StatusOr<StoredJob> stored = a->Get("j1-00000001");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_FALSE(stored->finished.has_value());
  // Its renewal reports j2 lost and extends nothing of b's.
  absl::StatusOr<LeaseRenewal> renewed = a->Renew();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(renewed->lost, Ids{"j2-00000001"});
  EXPECT_FALSE(a->Holds("j2-00000001"));
  EXPECT_TRUE(absl::IsAborted(
      a->Finish("j2-00000001", Finished("j2-00000001", arbor::v1::JOB_STATE_FINISHED, 3000))));
  // The holder writes.
  ASSERT_TRUE(
      b->Finish("j1-00000001", Finished("j1-00000001", arbor::v1::JOB_STATE_FINISHED, 4000)).ok());
  stored = a->Get("j1-00000001");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(stored->finished.has_value());
  EXPECT_TRUE(absl::IsNotFound(
      b->Finish("j9-00000001", Finished("j9-00000001", arbor::v1::JOB_STATE_FINISHED, 4000))));
}

TYPED_TEST(JobLeaseTest, ARestartTakesItsOwnJobsAtOnceAndNoOtherLiveOnes) {
  std::unique_ptr<JobStore> a = this->Open("a");
  std::unique_ptr<JobStore> b = this->Open("b");
  ASSERT_TRUE(a->Accept(Accepted("j1-00000001", 1000)).ok());
  ASSERT_TRUE(b->Accept(Accepted("j2-00000001", 2000)).ok());
  std::unique_ptr<JobStore> a_again = this->Open("a");  // a restarted before its lease lapsed.
  absl::StatusOr<std::vector<StoredJob>> taken = a_again->TakeOver(Claim::kLapsedAndOwn);
  ASSERT_EQ(this->Ids(taken), Ids{"j1-00000001"});
  EXPECT_EQ((*taken)[0].lease.epoch, 2);
  // The earlier process under the same id, were it still alive, is fenced like any other.
  absl::StatusOr<LeaseRenewal> renewed = a->Renew();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(renewed->lost, Ids{"j1-00000001"});
  EXPECT_TRUE(
      a_again->Finish("j1-00000001", Finished("j1-00000001", arbor::v1::JOB_STATE_FINISHED, 3000))
          .ok());
}

TYPED_TEST(JobLeaseTest, OfCoordinatorsTakingOverAtOnceEachJobGoesToOne) {
  std::unique_ptr<JobStore> dead = this->Open("dead");
  constexpr int kJobs = 40;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(dead->Accept(Accepted(absl::StrCat("j", i, "-00000001"), 1000 + i)).ok());
  }
  this->clock_.Advance(kLease);
  constexpr int kSurvivors = 4;
  std::vector<std::unique_ptr<JobStore>> survivors;
  for (int i = 0; i < kSurvivors; ++i) survivors.push_back(this->Open(absl::StrCat("s", i)));
  std::vector<Ids> taken(kSurvivors);
  std::vector<std::thread> threads;
  for (int i = 0; i < kSurvivors; ++i) {
    threads.emplace_back([&, i] {
      // Each claims twice: the second finds nothing the first left lapsed.
      for (int round = 0; round < 2; ++round) {
        for (std::string& id : this->Ids(survivors[i]->TakeOver(Claim::kLapsed))) {
          taken[i].push_back(std::move(id));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  Ids all;
  for (const Ids& ids : taken) all.insert(all.end(), ids.begin(), ids.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end()) << "a job was taken twice";
  for (int i = 0; i < kSurvivors; ++i) {
    absl::StatusOr<LeaseRenewal> renewed = survivors[i]->Renew();
    ASSERT_TRUE(renewed.ok()) << renewed.status();
    EXPECT_TRUE(renewed->lost.empty()) << i;
  }
}

TYPED_TEST(JobLeaseTest, ACancelReachesTheHolderAtItsRenewal) {
  std::unique_ptr<JobStore> a = this->Open("a");
  std::unique_ptr<JobStore> b = this->Open("b");
  ASSERT_TRUE(a->Accept(Accepted("j1-00000001", 1000)).ok());
  ASSERT_TRUE(a->Accept(Accepted("j2-00000001", 2000)).ok());
  absl::StatusOr<LeaseRenewal> renewed = a->Renew();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_TRUE(renewed->cancel_requested.empty());
  absl::StatusOr<StoredJob> asked = b->RequestCancel("j2-00000001");
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_TRUE(asked->lease.cancel_requested);
  EXPECT_EQ(asked->lease.coordinator, "a");
  renewed = a->Renew();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(renewed->cancel_requested, Ids{"j2-00000001"});
  // A finished job stays as it ended.
  ASSERT_TRUE(
      a->Finish("j1-00000001", Finished("j1-00000001", arbor::v1::JOB_STATE_FINISHED, 3000)).ok());
  asked = b->RequestCancel("j1-00000001");
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->finished->job.state(), arbor::v1::JOB_STATE_FINISHED);
  EXPECT_TRUE(absl::IsNotFound(b->RequestCancel("j9-00000001").status()));
}

TYPED_TEST(JobLeaseTest, ReleasedAndStrayJobsAreTakenWithoutWaitingForTheLease) {
  std::unique_ptr<JobStore> a = this->Open("a");
  std::unique_ptr<JobStore> b = this->Open("b");
  ASSERT_TRUE(a->Accept(Accepted("j1-00000001", 1000)).ok());
  ASSERT_TRUE(a->Release().ok());  // A clean shutdown.
  EXPECT_EQ(this->Ids(b->TakeOver(Claim::kLapsed)), Ids{"j1-00000001"});
  // A job held under b's id that this b process does not run (its end failed to record, or a
  // process before it left it) is let go at b's next renewal, for another to run.
  ASSERT_TRUE(b->Accept(Accepted("j2-00000001", 2000)).ok());
  absl::StatusOr<LeaseRenewal> renewed = this->Open("b")->Renew();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_TRUE(renewed->lost.empty());
  EXPECT_EQ(this->Ids(a->TakeOver(Claim::kLapsed)), (Ids{"j1-00000001", "j2-00000001"}));
}

TYPED_TEST(JobLeaseTest, EachLeaseCarriesWhereItsHolderIsReached) {
  std::unique_ptr<JobStore> a = this->Open("a");
  std::unique_ptr<JobStore> b = this->Open("b");
  // Claimed at start, before a serves: no address yet.
  ASSERT_TRUE(a->Accept(Accepted("j1-00000001", 1000)).ok());
  absl::StatusOr<StoredJob> stored = b->Get("j1-00000001");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->lease.address, "");
  // Once a knows its address, the jobs it holds carry it at once, and those it accepts next.
  ASSERT_TRUE(a->Advertise("10.0.0.1:50051").ok());
  stored = b->Get("j1-00000001");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->lease.address, "10.0.0.1:50051");
  ASSERT_TRUE(a->Accept(Accepted("j2-00000001", 2000)).ok());
  stored = b->Get("j2-00000001");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->lease.address, "10.0.0.1:50051");
  // A takeover records the new holder's.
  ASSERT_TRUE(b->Advertise("10.0.0.2:50051").ok());
  this->clock_.Advance(kLease + absl::Milliseconds(1));
  absl::StatusOr<std::vector<StoredJob>> taken = b->TakeOver(Claim::kLapsed);
  ASSERT_EQ(this->Ids(taken), (Ids{"j1-00000001", "j2-00000001"}));
  for (const StoredJob& job : *taken) EXPECT_EQ(job.lease.address, "10.0.0.2:50051");
  stored = a->Get("j2-00000001");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->lease.coordinator, "b");
  EXPECT_EQ(stored->lease.address, "10.0.0.2:50051");
}

TYPED_TEST(JobLeaseTest, AStoreFromBeforeLeasesOpensAndItsJobsAreTakenOver) {
  absl::StatusOr<std::unique_ptr<SqlDatabase>> db = this->backend_.Connect();
  ASSERT_TRUE(db.ok()) << db.status();
  // The table as the first stores made it, with one unfinished job.
  ASSERT_TRUE(
      (*db)
          ->Query(absl::StrCat("CREATE TABLE arbor_jobs (job_id TEXT PRIMARY KEY, owner TEXT NOT "
                               "NULL, client_tag TEXT NOT NULL, model TEXT NOT NULL, "
                               "model_fingerprint TEXT NOT NULL, created_ms BIGINT NOT NULL, "
                               "deadline_ms BIGINT NOT NULL, state BIGINT NOT NULL, finished_ms "
                               "BIGINT NOT NULL, bytes BIGINT NOT NULL, request ",
                               (*db)->BlobType(), " NOT NULL, job ", (*db)->BlobType(), ", events ",
                               (*db)->BlobType(), ", tree ", (*db)->BlobType(), ")"),
                  {})
          .ok());
  const SqlValue params[] = {SqlBlob{Accepted("j1-00000001", 1000).request.SerializeAsString()}};
  ASSERT_TRUE((*db)
                  ->Query("INSERT INTO arbor_jobs VALUES ('j1-00000001', 'alice', '', 'tiny', "
                          "'fp', 1000, -1, 1, 0, 3, $1, NULL, NULL, NULL)",
                          params)
                  .ok());
  std::unique_ptr<JobStore> a = this->Open("a");
  ASSERT_NE(a, nullptr);
  std::unique_ptr<JobStore> b = this->Open("b");  // Opening an up-to-date store changes nothing.
  absl::StatusOr<std::vector<StoredJob>> taken = b->TakeOver(Claim::kLapsed);
  ASSERT_EQ(this->Ids(taken), Ids{"j1-00000001"});
  EXPECT_EQ((*taken)[0].lease.epoch, 1);
  EXPECT_EQ((*taken)[0].accepted.owner, "alice");
  EXPECT_EQ((*taken)[0].lease.address, "");  // b advertised none.
}

TEST(JobLeaseOptionsTest, AStoreNeedsACoordinatorIdAndALease) {
  const std::string spec = absl::StrCat("sqlite:", ::testing::TempDir(), "lease_options.db");
  EXPECT_TRUE(absl::IsInvalidArgument(OpenJobStore(spec, {""}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(OpenJobStore(spec, {"a", absl::ZeroDuration()}).status()));
}

}  // namespace
}  // namespace arbor::coordinator
