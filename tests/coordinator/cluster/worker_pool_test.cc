#include "coordinator/cluster/worker_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "base/fake_clock.h"
#include "tests/coordinator/cluster/fake_worker.h"

namespace arbor::coordinator {
namespace {

WorkerPoolOptions FastOptions() {
  WorkerPoolOptions options;
  options.heartbeat_timeout = absl::Seconds(10);
  options.poll_interval = absl::Seconds(2);
  options.rpc_timeout = absl::Seconds(2);
  options.backoff_initial = absl::Seconds(1);
  options.backoff_max = absl::Seconds(8);
  return options;
}

arbor::v1::WorkerInfo Info(const std::string& id) {
  arbor::v1::WorkerInfo info;
  info.set_worker_id(id);
  info.set_block_size(16);
  info.mutable_model()->set_vocab_size(1000);
  info.mutable_model()->set_max_context(512);
  return info;
}

arbor::v1::HealthResponse Load(int live) {
  arbor::v1::HealthResponse load;
  load.set_serving(true);
  load.set_live_sequences(live);
  return load;
}

struct Recorder {
  void Attach(WorkerPool& pool) {
    pool.AddListener([this](const WorkerEvent& e) {
      absl::MutexLock lock(&mu);
      events.push_back(e);
    });
  }
  std::vector<WorkerEvent> Take() {
    absl::MutexLock lock(&mu);
    return std::move(events);
  }
  absl::Mutex mu;
  std::vector<WorkerEvent> events;
};

TEST(WorkerPool, RegisterIsIdempotentByAddress) {
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  ASSERT_EQ(*pool.Register("10.0.0.1:7000", Info("w1")), "w1");
  ASSERT_EQ(*pool.Register("10.0.0.1:7000", Info("w1")), "w1");
  EXPECT_EQ(*pool.Register("10.0.0.2:7000", Info("")), "10.0.0.2:7000");  // Id = address.
  const auto list = pool.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].worker_id(), "w1");
  EXPECT_EQ(list[1].state(), arbor::v1::WORKER_STATE_READY);
  EXPECT_EQ(list[1].last_heartbeat_unix_ms(), absl::ToUnixMillis(clock.Now()));
  EXPECT_EQ(pool.ready_count(), 2);
}

TEST(WorkerPool, RegisterRejectsBadAddressesAndLiveDuplicateIds) {
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  for (const char* bad : {"", "nohost", ":80", "host:0", "host:70000", "host:x"}) {
    EXPECT_EQ(pool.Register(bad, Info("w")).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  ASSERT_TRUE(pool.Register("a:1", Info("w")).ok());
  EXPECT_EQ(pool.Register("b:1", Info("w")).status().code(), absl::StatusCode::kAlreadyExists);
  // Once the first is dead, the id may move to the new address.
  pool.MarkDead("w", pool.Get("w")->incarnation, "test");
  ASSERT_TRUE(pool.Register("b:1", Info("w")).ok());
  ASSERT_EQ(pool.List().size(), 1u);
  EXPECT_EQ(pool.List()[0].address(), "b:1");
}

TEST(WorkerPool, MissedHeartbeatsMakeAWorkerDeadAndTellListeners) {
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  Recorder recorder;
  recorder.Attach(pool);
  ASSERT_TRUE(pool.Register("a:1", Info("w")).ok());
  clock.Advance(absl::Seconds(8));
  EXPECT_TRUE(pool.Heartbeat("w", Load(3)).known);
  clock.Advance(absl::Seconds(8));
  pool.Tick();
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_READY);
  EXPECT_EQ(pool.List()[0].load().live_sequences(), 3);
  clock.Advance(absl::Seconds(3));  // 11 s since the last heartbeat.
  pool.Tick();
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_DEAD);
  const auto events = recorder.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].worker_id, "w");
  EXPECT_EQ(events[0].kind, WorkerEvent::kDied);
  // Its next heartbeat is told to register again, which revives it.
  EXPECT_FALSE(pool.Heartbeat("w", Load(0)).known);
  EXPECT_FALSE(pool.Heartbeat("stranger", Load(0)).known);
  ASSERT_TRUE(pool.Register("a:1", Info("w")).ok());
  EXPECT_EQ(pool.ready_count(), 1);
}

TEST(WorkerPool, DrainStopsRoutingTellsListenersAndTheWorker) {
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  Recorder recorder;
  recorder.Attach(pool);
  ASSERT_TRUE(pool.Register("a:1", Info("a")).ok());
  ASSERT_TRUE(pool.Register("b:1", Info("b")).ok());
  ASSERT_EQ(pool.RouteJob({}, {})->worker_id, "a");
  ASSERT_EQ(*pool.Drain("a"), 1);
  EXPECT_EQ(*pool.Drain("a"), 1);  // Idempotent: no second event.
  const auto events = recorder.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, WorkerEvent::kDraining);
  EXPECT_TRUE(pool.Heartbeat("a", Load(1)).drain);
  EXPECT_FALSE(pool.Heartbeat("b", Load(0)).drain);
  EXPECT_EQ(pool.RouteJob({}, {})->worker_id, "b");
  // Re-registering does not undo an admin's drain.
  ASSERT_TRUE(pool.Register("a:1", Info("a")).ok());
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_DRAINING);
  EXPECT_EQ(pool.Drain("nobody").status().code(), absl::StatusCode::kNotFound);
}

TEST(WorkerPool, UndrainRoutesAgainOnceTheWorkerServes) {
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  ASSERT_TRUE(pool.Register("a:1", Info("a")).ok());
  ASSERT_TRUE(pool.Drain("a").ok());
  ASSERT_TRUE(pool.Heartbeat("a", Load(0)).drain);
  ASSERT_TRUE(pool.Undrain("a").ok());
  // The worker stopped serving when told to drain: no job goes to it until it serves again.
  EXPECT_EQ(pool.RouteJob({}, {}).status().code(), absl::StatusCode::kUnavailable);
  arbor::v1::HealthResponse not_yet = Load(0);
  not_yet.set_serving(false);
  EXPECT_FALSE(pool.Heartbeat("a", not_yet).drain);  // Tells it to serve again.
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_DRAINING);
  EXPECT_FALSE(pool.Heartbeat("a", Load(0)).drain);
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_READY);
  EXPECT_EQ(pool.RouteJob({}, {})->worker_id, "a");
  EXPECT_EQ(pool.Undrain("nobody").code(), absl::StatusCode::kNotFound);
}

TEST(WorkerPool, AWorkerThatStopsServingUntoldLeavesRoutingUntilItServesAgain) {
  // Registered: its heartbeat says not serving (its device failed).
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  Recorder recorder;
  recorder.Attach(pool);
  ASSERT_TRUE(pool.Register("a:1", Info("a")).ok());
  arbor::v1::HealthResponse broken = Load(0);
  broken.set_serving(false);
  EXPECT_FALSE(pool.Heartbeat("a", broken).drain) << "nobody asked it to drain";
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_DRAINING);
  EXPECT_EQ(pool.RouteJob({}, {}).status().code(), absl::StatusCode::kUnavailable);
  auto events = recorder.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, WorkerEvent::kDraining);  // Its jobs move.
  EXPECT_FALSE(pool.Heartbeat("a", Load(0)).drain);
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_READY);

  // Static: its Health poll says so.
  FakeWorker worker("static-1");
  ASSERT_TRUE(worker.Start().ok());
  ASSERT_TRUE(pool.AddStatic(worker.address()).ok());
  pool.Tick();
  ASSERT_EQ(pool.Get("static-1")->worker_id, "static-1");
  worker.SetServing(false);
  clock.Advance(absl::Seconds(2));
  pool.Tick();
  EXPECT_EQ(pool.List()[1].state(), arbor::v1::WORKER_STATE_DRAINING);
  events = recorder.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].worker_id, "static-1");
  worker.SetServing(true);
  clock.Advance(absl::Seconds(2));
  pool.Tick();
  EXPECT_EQ(pool.List()[1].state(), arbor::v1::WORKER_STATE_READY);
}

TEST(WorkerPool, ARestartedWorkerGetsAFreshChannelAndOldFailuresDoNotTouchIt) {
  base::FakeClock clock;
  int dialled = 0;
  WorkerPool pool(FastOptions(), &clock, [&dialled](const std::string& address) {
    ++dialled;
    return WorkerPool::InsecureStubs()(address);  // Never called: channels connect lazily.
  });
  Recorder recorder;
  recorder.Attach(pool);
  arbor::v1::WorkerInfo first = Info("w");
  first.set_instance_id(1);
  ASSERT_TRUE(pool.Register("a:1", first).ok());
  const uint64_t old_life = pool.Get("w")->incarnation;
  ASSERT_TRUE(pool.Register("a:1", first).ok());  // Idempotent: same process, same channel.
  EXPECT_EQ(dialled, 1);
  // A job saw the first process fail; the worker restarts and registers before anyone noticed.
  arbor::v1::WorkerInfo second = Info("w");
  second.set_instance_id(2);
  ASSERT_TRUE(pool.Register("a:1", second).ok());
  EXPECT_EQ(dialled, 2) << "a new process is dialled afresh";
  const auto events = recorder.Take();
  ASSERT_EQ(events.size(), 1u) << "the old process's jobs move";
  EXPECT_EQ(events[0].kind, WorkerEvent::kDied);
  const uint64_t new_life = pool.Get("w")->incarnation;
  EXPECT_NE(new_life, old_life);
  EXPECT_FALSE(pool.IsCurrent("w", old_life));
  pool.MarkDead("w", old_life, "Connection refused");  // A late failure of the old life.
  EXPECT_EQ(pool.ready_count(), 1);
  EXPECT_EQ(pool.RouteJob({}, {})->worker_id, "w");
  // Once dead, a registration of the same process is a new life with a new channel too.
  pool.MarkDead("w", new_life, "Connection refused");
  ASSERT_TRUE(pool.Register("a:1", second).ok());
  EXPECT_EQ(dialled, 3);
  EXPECT_TRUE(pool.IsCurrent("w", pool.Get("w")->incarnation));
  EXPECT_EQ(pool.ready_count(), 1);
}

TEST(WorkerPool, DeregisterDrainsOnlyTheRegisteredInstance) {
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  Recorder recorder;
  recorder.Attach(pool);
  arbor::v1::WorkerInfo info = Info("w");
  info.set_instance_id(7);
  ASSERT_TRUE(pool.Register("a:1", info).ok());
  EXPECT_EQ(pool.Deregister("w", 8).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool.Deregister("x", 7).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(pool.Deregister("w", 7).ok());
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_DRAINING);
  EXPECT_EQ(pool.RouteJob({}, {}).status().code(), absl::StatusCode::kUnavailable);
  const auto events = recorder.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, WorkerEvent::kDraining);
  // It refuses new runs with UNAVAILABLE while it drains: the job layer's report of such a
  // refusal leaves it DRAINING, a worker that left, not a dead one.
  pool.MarkDead("w", pool.Get("w")->incarnation, "worker is draining");
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_DRAINING);
  EXPECT_TRUE(recorder.Take().empty());
  // The process restarts: a new instance is READY again.
  info.set_instance_id(9);
  ASSERT_TRUE(pool.Register("a:1", info).ok());
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_READY);
}

TEST(WorkerPool, RoutingCountsHomedJobsAndFollowsPrefixes) {
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  ASSERT_TRUE(pool.Register("a:1", Info("a")).ok());
  ASSERT_TRUE(pool.Register("b:1", Info("b")).ok());
  std::vector<int32_t> shared(64, 5), other(64, 9);
  EXPECT_EQ(pool.RouteJob(shared, {})->worker_id, "a");
  EXPECT_EQ(pool.RouteJob(other, {})->worker_id, "b");  // a has one homed job now.
  const auto again = pool.RouteJob(shared, {});
  EXPECT_EQ(again->worker_id, "a");
  EXPECT_EQ(again->affinity_blocks, 4);
  EXPECT_EQ(pool.List()[0].jobs(), 2);
  pool.JobLeft("a");
  EXPECT_EQ(pool.List()[0].jobs(), 1);
  // Re-homing after a failure excludes the failed worker.
  EXPECT_EQ(pool.RouteJob(shared, {"a"})->worker_id, "b");
  // A dead worker's prefixes are forgotten.
  pool.MarkDead("a", pool.Get("a")->incarnation, "test");
  EXPECT_EQ(pool.RouteJob(shared, {})->affinity_blocks, 4);  // Now b's.
  EXPECT_EQ(pool.RouteJob(shared, {"b"}).status().code(), absl::StatusCode::kUnavailable);
}

TEST(WorkerPool, ModelComesFromAReadyWorker) {
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  EXPECT_EQ(pool.Model().status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(pool.Register("a:1", Info("a")).ok());
  EXPECT_EQ(pool.Model()->vocab_size(), 1000);
  auto handle = pool.Get("a");
  ASSERT_TRUE(handle.ok());
  EXPECT_EQ(handle->address, "a:1");
  EXPECT_NE(handle->stub, nullptr);
  EXPECT_EQ(pool.Get("zz").status().code(), absl::StatusCode::kNotFound);
}

TEST(WorkerPool, StaticWorkerIsDialledWithBackoffUntilItAnswers) {
  FakeWorker worker("static-1");
  ASSERT_TRUE(worker.Start().ok());
  worker.up = false;  // Late: still loading its model.
  base::FakeClock clock;
  WorkerPool pool(FastOptions(), &clock);
  Recorder recorder;
  recorder.Attach(pool);
  ASSERT_TRUE(pool.AddStatic(worker.address()).ok());
  ASSERT_TRUE(pool.AddStatic(worker.address()).ok());  // Known address: no second entry.
  pool.Tick();
  ASSERT_EQ(pool.List().size(), 1u);
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_DEAD);
  EXPECT_EQ(pool.List()[0].worker_id(), worker.address());
  EXPECT_EQ(worker.info_calls, 1);
  pool.Tick();  // Backing off: not due yet.
  EXPECT_EQ(worker.info_calls, 1);
  clock.Advance(absl::Seconds(1));
  pool.Tick();
  EXPECT_EQ(worker.info_calls, 2);
  clock.Advance(absl::Seconds(1));
  pool.Tick();  // Second failure doubled the backoff to 2 s.
  EXPECT_EQ(worker.info_calls, 2);

  worker.up = true;
  worker.SetLiveSequences(2);
  clock.Advance(absl::Seconds(1));
  pool.Tick();
  ASSERT_EQ(pool.List().size(), 1u);
  EXPECT_EQ(pool.List()[0].worker_id(), "static-1");  // The id Info reported.
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_READY);
  EXPECT_EQ(pool.List()[0].load().live_sequences(), 2);
  EXPECT_EQ(pool.List()[0].info().block_size(), 16);
  EXPECT_TRUE(recorder.Take().empty());  // Never lived before: nothing to re-home.

  // Polled by Health; silence past the timeout makes it DEAD.
  worker.up = false;
  for (int i = 0; i < 5; ++i) {
    clock.Advance(absl::Seconds(2));
    pool.Tick();
  }
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_READY);
  clock.Advance(absl::Seconds(2));
  pool.Tick();
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_DEAD);
  const auto events = recorder.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].worker_id, "static-1");
  EXPECT_EQ(events[0].kind, WorkerEvent::kDied);
  // It comes back when it answers again.
  worker.up = true;
  clock.Advance(absl::Seconds(8));
  pool.Tick();
  EXPECT_EQ(pool.List()[0].state(), arbor::v1::WORKER_STATE_READY);
}

TEST(WorkerPool, MonitorThreadPollsInTheBackground) {
  FakeWorker worker("bg");
  ASSERT_TRUE(worker.Start().ok());
  base::FakeClock clock;
  WorkerPoolOptions options = FastOptions();
  options.monitor_tick = absl::Milliseconds(5);
  WorkerPool pool(options, &clock);
  ASSERT_TRUE(pool.AddStatic(worker.address()).ok());
  pool.StartMonitor();
  for (int i = 0; i < 2000 && pool.ready_count() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(pool.ready_count(), 1);
}

// Token ids mean nothing across tokenizers: a worker of another model never takes a job.
TEST(WorkerPool, AWorkerOfAnotherModelIsRefusedNamingBothModels) {
  base::FakeClock clock;
  WorkerPoolOptions options = FastOptions();
  options.model = {"SmolLM2-135M-Instruct", "llama L30 vocab 49152"};
  WorkerPool pool(options, &clock);
  arbor::v1::WorkerInfo tiny = Info("w");
  tiny.mutable_model()->set_name("tiny");
  tiny.mutable_model()->set_fingerprint("llama L2 vocab 512");
  const absl::Status refused = pool.Register("a:1", tiny).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::AllOf(::testing::HasSubstr("'tiny' (llama L2 vocab 512)"),
                               ::testing::HasSubstr("'SmolLM2-135M-Instruct' (llama L30"),
                               ::testing::HasSubstr("--model")));
  EXPECT_TRUE(pool.List().empty());
  arbor::v1::WorkerInfo same = Info("w");
  same.mutable_model()->set_fingerprint("llama L30 vocab 49152");
  EXPECT_TRUE(pool.Register("a:1", same).ok());
  EXPECT_EQ(pool.ready_count(), 1);

  // Restarted on the same address with another model: the worker known there is gone at once,
  // not a heartbeat timeout later, and its status says why.
  Recorder recorder;
  recorder.Attach(pool);
  EXPECT_FALSE(pool.Register("a:1", tiny).ok());
  EXPECT_EQ(pool.ready_count(), 0);
  EXPECT_THAT(pool.List()[0].refused(), ::testing::HasSubstr("'tiny'"));
  ASSERT_EQ(recorder.Take().size(), 1u);
  EXPECT_TRUE(pool.Register("a:1", same).ok());
  EXPECT_EQ(pool.ready_count(), 1);
  EXPECT_EQ(pool.List()[0].refused(), "");
}

TEST(WorkerPool, AListedWorkerOfAnotherModelStaysDeadSayingWhy) {
  base::FakeClock clock;
  WorkerPoolOptions options = FastOptions();
  options.model = {"small", "llama L4 vocab 2048"};
  WorkerPool pool(options, &clock);
  FakeWorker worker("static-1");  // Reports no fingerprint, as an older worker does.
  ASSERT_TRUE(worker.Start().ok());
  ASSERT_TRUE(pool.AddStatic(worker.address()).ok());
  pool.Tick();
  const std::vector<arbor::v1::WorkerStatus> listed = pool.List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].state(), arbor::v1::WORKER_STATE_DEAD);
  EXPECT_THAT(listed[0].refused(), ::testing::HasSubstr("no model identity"));
  EXPECT_THAT(listed[0].refused(), ::testing::HasSubstr("'small'"));
  EXPECT_FALSE(pool.RouteJob({1, 2, 3}, {}).ok());
}

}  // namespace
}  // namespace arbor::coordinator
