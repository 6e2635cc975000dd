// The engine when its backend fails: a step that fails on its own fails its
// runs and the engine serves on; a failure that leaves the backend unusable (a CUDA context after
// an illegal address, here injected by a decorator over the CPU backend) fails the runs with
// UNAVAILABLE, every later run too, and Health stops saying SERVING — so the coordinator moves
// the worker's jobs elsewhere instead of sending it more.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "tests/worker/engine/engine_harness.h"
#include "tests/worker/engine/forwarding_backend.h"
#include "worker/backend/backend.h"
#include "worker/engine/engine.h"

namespace arbor::worker {
namespace {

// Forwards to the CPU backend until told to fail; `sticky` failures make it unusable.
class FaultyBackend : public testing::ForwardingBackend {
 public:
  struct Faults {
    std::atomic<bool> fail_next{false};
    std::atomic<bool> sticky{false};
  };
  FaultyBackend(std::unique_ptr<Backend> inner, Faults* faults)
      : ForwardingBackend(std::move(inner)), faults_(faults) {}

  std::string name() const override { return "faulty " + ForwardingBackend::name(); }
  absl::Status Forward(std::span<const ForwardRow> rows, const TensorTap& tap) override {
    if (faults_->fail_next.exchange(false)) {
      broken_ = faults_->sticky.load();
      return absl::InternalError("forward step: cudaErrorIllegalAddress (injected)");
    }
    if (broken_) return absl::InternalError("forward step: cudaErrorIllegalAddress (sticky)");
    return ForwardingBackend::Forward(rows, tap);
  }
  absl::Status Usable() override {
    return broken_ ? absl::InternalError("device cuda:0: cudaErrorIllegalAddress (sticky)")
                   : absl::OkStatus();
  }

 private:
  Faults* faults_;
  bool broken_ = false;  // Engine thread only.
};

class EngineFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::TempModel>> model = testing::TempModel::Make("tiny", 3);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.kv_tokens = 2048;
    options.threads = 1;
    options.wrap_backend = [this](std::unique_ptr<Backend> inner) {
      return std::make_unique<FaultyBackend>(std::move(inner), &faults_);
    };
    absl::StatusOr<std::unique_ptr<Engine>> engine = testing::LoadEngine(options);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  absl::StatusOr<v1::RunResponse> Decode(uint64_t id) {
    v1::RunRequest request;
    *request.add_items() = testing::DecodeItem(id, testing::Prompt(12), 6);
    return testing::RunSync(*engine_, request);
  }

  FaultyBackend::Faults faults_;
  std::unique_ptr<testing::TempModel> model_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineFaultTest, AFailedStepFailsItsRunsAndTheEngineServesOn) {
  ASSERT_TRUE(Decode(1).ok());
  faults_.fail_next = true;
  const absl::StatusOr<v1::RunResponse> failed = Decode(2);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal) << failed.status();
  EXPECT_TRUE(engine_->Health().serving());
  EXPECT_TRUE(Decode(3).ok()) << "the backend is still usable";
}

TEST_F(EngineFaultTest, AnUnusableBackendFailsEveryRunAsUnavailableAndStopsServing) {
  ASSERT_TRUE(Decode(1).ok());
  faults_.sticky = true;
  faults_.fail_next = true;
  const absl::StatusOr<v1::RunResponse> failed = Decode(2);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_NE(failed.status().message().find("restart the worker"), std::string::npos)
      << failed.status();
  EXPECT_NE(failed.status().message().find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_FALSE(engine_->Health().serving());
  const absl::StatusOr<v1::RunResponse> next = Decode(3);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), absl::StatusCode::kUnavailable) << next.status();
  EXPECT_FALSE(engine_->Health().serving());
}

}  // namespace
}  // namespace arbor::worker
