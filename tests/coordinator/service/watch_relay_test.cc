// The relay of a Watch between two coordinators on one job store (a real SQLite file), each its
// Generation service on a loopback server over the scripted worker: a job that runs on a
// streams through b, relayed from a; when a stops serving mid-stream, b's client keeps its
// stream and gets the rest from the store once a recorded the job's end; a holder with tokens
// authenticates the caller b relays for; with no holder that answers, the relay gives up past
// its bound, saying why. And the address a coordinator records for the others to reach it.
#include "coordinator/service/watch_relay.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "coordinator/service/generation_service.h"
#include "coordinator/store/open_job_store.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rpc/server.h"
#include "rpc/tokens.h"
#include "tests/coordinator/service/service_harness.h"

namespace arbor::coordinator {
namespace {

// One coordinator: its view of the store, its jobs and its service on a loopback server.
// Members go in reverse: the server stops before the service, the store outlives the jobs.
struct Coordinator {
  std::unique_ptr<JobStore> store;
  std::unique_ptr<Harness> harness;
  std::unique_ptr<GenerationService> service;
  std::unique_ptr<rpc::Server> server;
  std::unique_ptr<arbor::v1::Generation::Stub> stub;
};

class WatchRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> next{0};
    path_ = absl::StrCat(::testing::TempDir(), "watch_relay_", getpid(), "_", next++, ".db");
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }

  // Coordinator `id` on the store, recording `advertise` with its leases (empty: its server's
  // address), relaying with `relay`, with `auth`'s tokens (null: open).
  std::unique_ptr<Coordinator> Start(const std::string& id, const WatchRelayOptions& relay = {},
                                     const std::string& advertise = "",
                                     const rpc::Authenticator* auth = nullptr) {
    auto c = std::make_unique<Coordinator>();
    absl::StatusOr<std::unique_ptr<JobStore>> store = OpenJobStore("sqlite:" + path_, {id});
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    c->store = *std::move(store);
    c->harness = std::make_unique<Harness>(JobRegistryOptions{}, 10, c->store.get());
    c->service =
        std::make_unique<GenerationService>(c->harness->launcher.get(), &c->harness->registry,
                                            &c->harness->prompts, auth, c->store.get(), relay);
    absl::StatusOr<std::unique_ptr<rpc::Server>> server =
        rpc::Server::Start("127.0.0.1:0", {c->service.get()});
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return nullptr;
    c->server = *std::move(server);
    EXPECT_TRUE(c->store->Advertise(advertise.empty() ? c->server->address() : advertise).ok());
    c->stub = arbor::v1::Generation::NewStub(
        grpc::CreateChannel(c->server->address(), grpc::InsecureChannelCredentials()));
    return c;
  }

  // A job of `caller` launched on `c` with its worker held, released until it emitted an
  // event: running.
  static std::shared_ptr<JobRecord> RunningJob(Coordinator& c,
                                               const rpc::Identity& caller = rpc::OpenIdentity()) {
    c.harness->worker->Hold(true);
    absl::StatusOr<std::shared_ptr<JobRecord>> record =
        c.harness->launcher->Launch(Harness::Request(12), absl::InfiniteFuture(), caller);
    EXPECT_TRUE(record.ok()) << record.status();
    if (!record.ok()) return nullptr;
    for (int i = 0; i < 1000 && (*record)->events.events().empty(); ++i) {
      c.harness->worker->ReleaseHeld();
      absl::SleepFor(absl::Milliseconds(2));
    }
    EXPECT_FALSE((*record)->events.events().empty());
    EXPECT_FALSE((*record)->events.closed()) << "the job must still run";
    return *std::move(record);
  }

  // Lets `c`'s held job run to its end.
  static void Finish(Coordinator& c, const JobRecord& record) {
    for (int i = 0; i < 1000 && !record.events.closed(); ++i) {
      c.harness->worker->ReleaseHeld();
      absl::SleepFor(absl::Milliseconds(2));
    }
    ASSERT_TRUE(record.events.closed());
  }

  static arbor::v1::JobRef Ref(const std::string& job_id) {
    arbor::v1::JobRef ref;
    ref.set_job_id(job_id);
    return ref;
  }

  static void ExpectSame(const std::vector<arbor::v1::GenerateEvent>& got,
                         const std::vector<arbor::v1::GenerateEvent>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].SerializeAsString(), want[i].SerializeAsString()) << "event " << i;
    }
  }

  std::string path_;
};

TEST_F(WatchRelayTest, AJobAnotherCoordinatorRunsStreamsThroughThisOne) {
  std::unique_ptr<Coordinator> a = Start("a");
  std::unique_ptr<Coordinator> b = Start("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::shared_ptr<JobRecord> record = RunningJob(*a);
  ASSERT_NE(record, nullptr);
  grpc::ClientContext context;
  auto watch = b->stub->Watch(&context, Ref(record->job_id));
  std::vector<arbor::v1::GenerateEvent> got(1);
  ASSERT_TRUE(watch->Read(&got[0]));  // The job runs on a: only a relay has its events.
  Finish(*a, *record);
  for (arbor::v1::GenerateEvent event; watch->Read(&event);) got.push_back(event);
  const grpc::Status status = watch->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ExpectSame(got, record->events.events());
  EXPECT_FALSE(b->harness->registry.Find(record->job_id).ok()) << "it ran on a only";
}

TEST_F(WatchRelayTest, AStreamOutlivesItsHolderAndEndsFromTheStore) {
  std::unique_ptr<Coordinator> a = Start("a");
  std::unique_ptr<Coordinator> b = Start("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::shared_ptr<JobRecord> record = RunningJob(*a);
  ASSERT_NE(record, nullptr);
  grpc::ClientContext context;
  context.AddMetadata("last-event-id", "0");
  auto watch = b->stub->Watch(&context, Ref(record->job_id));
  std::vector<arbor::v1::GenerateEvent> got(1);
  ASSERT_TRUE(watch->Read(&got[0]));
  // a no longer answers, while its job goes on and ends: b finds the end in the store.
  a->server.reset();
  Finish(*a, *record);
  for (arbor::v1::GenerateEvent event; watch->Read(&event);) got.push_back(event);
  const grpc::Status status = watch->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ExpectSame(got, record->events.events());
}

TEST_F(WatchRelayTest, TheHolderAuthenticatesTheCallerTheRelayIsFor) {
  const std::string tokens = path_ + ".tokens";
  ASSERT_TRUE(base::WriteFileAtomically(tokens,
                                        "aaaaaaaaaaaaaaaaaaaaaaaa alice user\n"
                                        "bbbbbbbbbbbbbbbbbbbbbbbb bob user\n")
                  .ok());
  absl::StatusOr<std::unique_ptr<rpc::Authenticator>> auth = rpc::Authenticator::Load(tokens);
  ASSERT_TRUE(auth.ok()) << auth.status();
  std::remove(tokens.c_str());
  std::unique_ptr<Coordinator> a = Start("a", {}, "", auth->get());
  std::unique_ptr<Coordinator> b = Start("b", {}, "", auth->get());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  rpc::Identity caller;
  caller.name = "alice";
  std::shared_ptr<JobRecord> record = RunningJob(*a, caller);
  ASSERT_NE(record, nullptr);
  grpc::ClientContext alice;
  alice.AddMetadata("authorization", "Bearer aaaaaaaaaaaaaaaaaaaaaaaa");
  auto watch = b->stub->Watch(&alice, Ref(record->job_id));
  arbor::v1::GenerateEvent event;
  EXPECT_TRUE(watch->Read(&event)) << watch->Finish().error_message();
  // Another user's job is unknown to b as to a: nothing is relayed.
  grpc::ClientContext bob;
  bob.AddMetadata("authorization", "Bearer bbbbbbbbbbbbbbbbbbbbbbbb");
  auto refused = b->stub->Watch(&bob, Ref(record->job_id));
  EXPECT_FALSE(refused->Read(&event));
  EXPECT_EQ(refused->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  Finish(*a, *record);
  while (watch->Read(&event)) {
  }
  EXPECT_TRUE(watch->Finish().ok());
}

TEST_F(WatchRelayTest, WithNoHolderThatAnswersTheRelayGivesUpSayingWhy) {
  WatchRelayOptions quick;
  quick.lease = absl::Milliseconds(50);
  quick.restart = absl::Milliseconds(100);
  std::unique_ptr<Coordinator> a = Start("a", {}, "127.0.0.1:1");  // Nothing listens there.
  std::unique_ptr<Coordinator> b = Start("b", quick);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::shared_ptr<JobRecord> record = RunningJob(*a);
  ASSERT_NE(record, nullptr);
  grpc::ClientContext context;
  auto watch = b->stub->Watch(&context, Ref(record->job_id));
  arbor::v1::GenerateEvent event;
  EXPECT_FALSE(watch->Read(&event));
  const grpc::Status status = watch->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "no coordinator streamed it for 200ms"))
      << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "--advertise (127.0.0.1:1)"))
      << status.error_message();
  Finish(*a, *record);
}

TEST(AdvertisedAddressTest, TheFlagElseAListenAddressThatIsNoWildcard) {
  EXPECT_EQ(AdvertisedAddress("10.0.0.5:50051", "0.0.0.0:50051"), "10.0.0.5:50051");
  EXPECT_EQ(AdvertisedAddress("", "127.0.0.1:40123"), "127.0.0.1:40123");
  EXPECT_EQ(AdvertisedAddress("", "0.0.0.0:50051"), "");
  EXPECT_EQ(AdvertisedAddress("", "[::]:50051"), "");
  EXPECT_TRUE(CheckAdvertise("").ok());
  EXPECT_TRUE(CheckAdvertise("arbor-coordinator-0.arbor:50051").ok());
  for (const char* bad : {"10.0.0.5", "10.0.0.5:0", ":50051"}) {
    const absl::Status refused = CheckAdvertise(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(refused)) << bad;
    EXPECT_TRUE(absl::StrContains(refused.message(), "--advertise")) << refused;
  }
}

}  // namespace
}  // namespace arbor::coordinator
