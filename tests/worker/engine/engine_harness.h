// Driving an in-process Engine synchronously, for the engine tests and the engine benchmark: a
// make-model checkpoint in a temporary directory, an engine over it, and blocking Run/Release.
#ifndef ARBOR_TESTS_WORKER_ENGINE_ENGINE_HARNESS_H_
#define ARBOR_TESTS_WORKER_ENGINE_ENGINE_HARNESS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arbor/v1/worker.pb.h"
#include "worker/engine/engine.h"
#include "worker/service/worker_setup.h"

namespace arbor::worker::testing {

// A checkpoint of `preset` written with MakeModel into a fresh directory, removed on destruction.
class TempModel {
 public:
  static absl::StatusOr<std::unique_ptr<TempModel>> Make(const std::string& preset, uint64_t seed);
  ~TempModel();
  const std::string& dir() const { return dir_; }

 private:
  explicit TempModel(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// LoadWorker's engine over `options` (model must be set).
absl::StatusOr<std::unique_ptr<Engine>> LoadEngine(const WorkerSetupOptions& options);

// Blocks until the run answers.
absl::StatusOr<v1::RunResponse> RunSync(Engine& engine, v1::RunRequest request,
                                        std::function<bool()> cancelled = {});
// Blocks until the release answers; returns how many ids were live.
int32_t ReleaseSync(Engine& engine, std::vector<uint64_t> ids);

// A decoding item: appends `append`, decodes `max_steps` with `seed`, ignores eos and takes
// structural decisions as their fallback samples (so it runs its steps unless told otherwise).
v1::RunItem DecodeItem(uint64_t id, const std::vector<int32_t>& append, int32_t max_steps,
                       uint64_t seed = 5);
// A row of the decision matrix every state of an item falls in (StructuralItem).
enum class MatrixRow { kLehv, kHehv };
// A 10-step item on an 8-token prompt that stops on structural decisions, reports `top_k`, and
// whose thresholds put every state in `row` of the decision matrix.
v1::RunItem StructuralItem(uint64_t id, int32_t top_k, MatrixRow row);
// `n` deterministic prompt tokens in [0, 250), varied by `salt`.
std::vector<int32_t> Prompt(int n, int32_t salt = 7);
// The sampled token of every step.
std::vector<int32_t> Tokens(const v1::RunResult& result);

}  // namespace arbor::worker::testing

#endif  // ARBOR_TESTS_WORKER_ENGINE_ENGINE_HARNESS_H_
