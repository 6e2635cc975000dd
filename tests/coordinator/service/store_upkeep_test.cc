// The store's upkeep with two coordinators on one store (a real SQLite file): it takes over a
// job whose holder's lease lapsed and runs it to its end under its id, fails a job another
// coordinator took from it (naming that one), and cancels a job whose Cancel reached another
// coordinator; a job taken from it leaves its memory, for the store to answer for. Leases here
// are short and real-time; the upkeep renews every 20 ms. Its health, which the coordinator's
// /health follows, turns UNAVAILABLE while renewals fail and back when one gets through.
#include "coordinator/service/store_upkeep.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/store/open_job_store.h"
#include "coordinator/store/sqlite_database.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/service/service_harness.h"

namespace arbor::coordinator {
namespace {

constexpr absl::Duration kLease = absl::Milliseconds(300);

// `store` whose renewals fail while `down` is set, as a store that does not answer.
class UnreachableStore : public JobStore {
 public:
  explicit UnreachableStore(JobStore* store) : store_(store) {}
  std::atomic<bool> down{false};

  absl::Status Accept(const AcceptedJob& job) override { return store_->Accept(job); }
  absl::Status Forget(const std::string& id) override { return store_->Forget(id); }
  absl::Status Finish(const std::string& id, const FinishedJob& f) override {
    return store_->Finish(id, f);
  }
  absl::StatusOr<StoredJob> Get(const std::string& id) override { return store_->Get(id); }
  absl::StatusOr<std::vector<StoredJob>> List(const JobFilter& filter, bool brief) override {
    return store_->List(filter, brief);
  }
  absl::StatusOr<std::vector<StoredJob>> TakeOver(Claim which) override {
    return store_->TakeOver(which);
  }
  absl::StatusOr<LeaseRenewal> Renew() override {
    if (down) return absl::UnavailableError("connection refused");
    return store_->Renew();
  }
  absl::StatusOr<StoredJob> RequestCancel(const std::string& id) override {
    return store_->RequestCancel(id);
  }
  absl::Status Advertise(const std::string& address) override { return store_->Advertise(address); }
  bool Holds(const std::string& id) override { return store_->Holds(id); }
  absl::Status Release() override { return store_->Release(); }
  absl::StatusOr<int64_t> Prune(const JobRetention& retention, absl::Time now) override {
    return store_->Prune(retention, now);
  }

 private:
  JobStore* const store_;
};

class StoreUpkeepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> next{0};
    path_ = absl::StrCat(::testing::TempDir(), "store_upkeep_", getpid(), "_", next++, ".db");
    a_ = Open("a");
    b_ = Open("b");
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }

  std::unique_ptr<JobStore> Open(const std::string& coordinator) {
    absl::StatusOr<std::unique_ptr<JobStore>> store =
        OpenJobStore("sqlite:" + path_, {coordinator, kLease, base::RealClock::Get()});
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // b's upkeep over `h` (whose launcher writes through b), renewing every 20 ms; `store`: the
  // store it keeps, b's by default.
  std::unique_ptr<StoreUpkeep> UpkeepOfB(Harness& h, JobStore* store = nullptr) {
    StoreUpkeepOptions options;
    options.renew_every = absl::Milliseconds(20);
    options.retry_every = absl::Milliseconds(20);
    return std::make_unique<StoreUpkeep>(options, store != nullptr ? store : b_.get(),
                                         h.launcher.get(), &h.registry, base::RealClock::Get(),
                                         std::vector<StoredJob>{});
  }

  // Whether `done` holds within 10 s.
  static bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return done();
  }

  std::string path_;
  std::unique_ptr<JobStore> a_;
  std::unique_ptr<JobStore> b_;
};

TEST_F(StoreUpkeepTest, ALapsedJobIsTakenOverAndRunToItsEndUnderItsId) {
  Harness h({}, 10, b_.get());
  absl::StatusOr<std::shared_ptr<JobRecord>> template_job =
      h.launcher->Launch(Harness::Request(3), absl::InfiniteFuture());
  ASSERT_TRUE(template_job.ok()) << template_job.status();
  absl::StatusOr<StoredJob> stored = b_->Get((*template_job)->job_id);
  ASSERT_TRUE(stored.ok()) << stored.status();
  AcceptedJob left = stored->accepted;
  left.job_id = "j9-00000001";
  ASSERT_TRUE(a_->Accept(left).ok());  // a accepted it, then died.

  const std::unique_ptr<StoreUpkeep> upkeep = UpkeepOfB(h);
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<StoredJob> job = b_->Get("j9-00000001");
    return job.ok() && job->finished.has_value();
  }));
  stored = b_->Get("j9-00000001");
  EXPECT_EQ(stored->finished->job.state(), arbor::v1::JOB_STATE_FINISHED);
  EXPECT_EQ(stored->finished->job.token_ids_size(), 3);
  EXPECT_EQ(stored->lease.coordinator, "b");
  EXPECT_EQ(stored->lease.epoch, 2);
}

TEST_F(StoreUpkeepTest, AJobTakenFromItFailsNamingTheHolderAndACancelElsewhereCancels) {
  Harness h({}, 10, b_.get());
  h.worker->Hold(true);  // Both jobs stay running.
  absl::StatusOr<std::shared_ptr<JobRecord>> lost =
      h.launcher->Launch(Harness::Request(50, 1), absl::InfiniteFuture());
  absl::StatusOr<std::shared_ptr<JobRecord>> cancelled =
      h.launcher->Launch(Harness::Request(50, 2), absl::InfiniteFuture());
  ASSERT_TRUE(lost.ok() && cancelled.ok());
  const std::unique_ptr<StoreUpkeep> upkeep = UpkeepOfB(h);
  // b is cut off from the store past its lease, and a takes the job over meanwhile: what a's
  // takeover leaves in the row.
  absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(path_);
  ASSERT_TRUE(db.ok()) << db.status();
  const SqlValue params[] = {(*lost)->job_id};
  ASSERT_TRUE((*db)
                  ->Query("UPDATE arbor_jobs SET coordinator = 'a', epoch = epoch + 1 "
                          "WHERE job_id = $1",
                          params)
                  .ok());
  h.registry.Forget((*cancelled)->job_id);  // Running: kept.
  ASSERT_TRUE(h.registry.Find((*cancelled)->job_id).ok());
  ASSERT_TRUE(a_->RequestCancel((*cancelled)->job_id).ok());

  ASSERT_TRUE(Eventually([&] { return (*lost)->job->state() == arbor::v1::JOB_STATE_FAILED; }));
  EXPECT_THAT((*lost)->job->error(), ::testing::HasSubstr("coordinator a took it over"));
  // Its end here is not the job's: b answers for it from the store, as a's, from now on.
  ASSERT_TRUE(
      Eventually([&] { return absl::IsNotFound(h.registry.Find((*lost)->job_id).status()); }));
  ASSERT_TRUE(
      Eventually([&] { return (*cancelled)->job->state() == arbor::v1::JOB_STATE_CANCELLED; }));
  // The lost job's end here is not recorded; the cancelled one's is.
  absl::StatusOr<StoredJob> row = a_->Get((*lost)->job_id);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_FALSE(row->finished.has_value());
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<StoredJob> job = a_->Get((*cancelled)->job_id);
    return job.ok() && job->finished.has_value();
  }));
  EXPECT_EQ(a_->Get((*cancelled)->job_id)->finished->job.state(), arbor::v1::JOB_STATE_CANCELLED);
  // Of the two, b keeps the cancelled one only.
  ASSERT_TRUE(Eventually([&] { return h.registry.finished_count() == 1; }));
  EXPECT_EQ(h.registry.finished_bytes(), static_cast<int64_t>((*cancelled)->RetainedBytes()));
}

TEST_F(StoreUpkeepTest, HealthIsUnavailableWhileRenewalsFail) {
  Harness h({}, 10, b_.get());
  UnreachableStore store(b_.get());
  const std::unique_ptr<StoreUpkeep> upkeep = UpkeepOfB(h, &store);
  EXPECT_TRUE(upkeep->Health().ok()) << upkeep->Health();
  store.down = true;
  ASSERT_TRUE(Eventually([&] { return absl::IsUnavailable(upkeep->Health()); }));
  EXPECT_THAT(upkeep->Health().message(),
              ::testing::AllOf(::testing::HasSubstr("job store does not answer"),
                               ::testing::HasSubstr("connection refused")));
  store.down = false;
  EXPECT_TRUE(Eventually([&] { return upkeep->Health().ok(); }));
}

}  // namespace
}  // namespace arbor::coordinator
