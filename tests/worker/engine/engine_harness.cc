#include "tests/worker/engine/engine_harness.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "base/status_macros.h"
#include "model/make_model.h"

namespace arbor::worker::testing {

absl::StatusOr<std::unique_ptr<TempModel>> TempModel::Make(const std::string& preset,
                                                           uint64_t seed) {
  static std::atomic<int> counter = 0;
  std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(), "/arbor-", preset,
                                 "-", getpid(), "-", counter++);
  model::MakeModelOptions options;
  options.preset = preset;
  options.out_dir = dir;
  options.seed = seed;
  RETURN_IF_ERROR(model::MakeModel(options).status());
  return std::unique_ptr<TempModel>(new TempModel(std::move(dir)));
}

TempModel::~TempModel() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

absl::StatusOr<std::unique_ptr<Engine>> LoadEngine(const WorkerSetupOptions& options) {
  ASSIGN_OR_RETURN(LoadedWorker loaded, LoadWorker(options));
  return std::move(loaded.engine);
}

absl::StatusOr<v1::RunResponse> RunSync(Engine& engine, v1::RunRequest request,
                                        std::function<bool()> cancelled) {
  absl::StatusOr<v1::RunResponse> out;
  absl::Notification done;
  engine.Run(std::move(request), std::move(cancelled),
             [&](absl::StatusOr<v1::RunResponse> response) {
               out = std::move(response);
               done.Notify();
             });
  done.WaitForNotification();
  return out;
}

int32_t ReleaseSync(Engine& engine, std::vector<uint64_t> ids) {
  int32_t live = -1;
  absl::Notification done;
  engine.Release(std::move(ids), [&](int32_t n) {
    live = n;
    done.Notify();
  });
  done.WaitForNotification();
  return live;
}

v1::RunItem DecodeItem(uint64_t id, const std::vector<int32_t>& append, int32_t max_steps,
                       uint64_t seed) {
  v1::RunItem item;
  item.set_sequence_id(id);
  for (int32_t t : append) item.add_append(t);
  item.set_max_steps(max_steps);
  item.set_seed(seed);
  item.mutable_stop()->set_ignore_eos(true);
  return item;
}

v1::RunItem StructuralItem(uint64_t id, int32_t top_k, MatrixRow row) {
  v1::RunItem item = DecodeItem(id, Prompt(8), 10);
  item.set_stop_on_structural(true);
  item.set_top_k(top_k);
  v1::Thresholds* t = item.mutable_policy()->mutable_thresholds();
  t->set_lelv_entropy(0);  // No ARGMAX, no INSERT.
  t->set_helv_entropy(64);
  const bool lehv = row == MatrixRow::kLehv;
  t->set_lehv_entropy(lehv ? 64 : 0);
  t->set_lehv_varentropy(0);
  t->set_hehv_entropy(0);
  t->set_hehv_varentropy(0);
  return item;
}

std::vector<int32_t> Prompt(int n, int32_t salt) {
  std::vector<int32_t> tokens;
  for (int i = 0; i < n; ++i) tokens.push_back((salt + 37 * i) % 250);
  return tokens;
}

std::vector<int32_t> Tokens(const v1::RunResult& result) {
  std::vector<int32_t> tokens;
  for (const v1::StepResult& step : result.steps()) tokens.push_back(step.token_id());
  return tokens;
}

}  // namespace arbor::worker::testing
