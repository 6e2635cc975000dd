#include "tools/default_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/make_model.h"
#include "model/model_store.h"

namespace arbor::tools {
namespace {

constexpr char kTinyPreset[] = "tiny";
// Bump when make-model's output changes, so stale cached models are not reused.
constexpr char kTinyModelName[] = "tiny-seed1-v1";
constexpr uint64_t kTinyModelSeed = 1;

// The tiny random-weight preset, written first when absent.
absl::StatusOr<std::string> EnsureTinyModel() {
  const std::string dir = absl::StrCat(model::CacheDir(), "/models/", kTinyModelName);
  if (std::filesystem::exists(dir + "/model.safetensors") &&
      std::filesystem::exists(dir + "/tokenizer.json")) {
    return dir;
  }
  // Write into a temporary sibling and rename, so an interrupted run leaves nothing half made.
  const std::string tmp = absl::StrCat(dir, ".tmp.", ::getpid());
  model::MakeModelOptions options;
  options.preset = kTinyPreset;
  options.out_dir = tmp;
  options.seed = kTinyModelSeed;
  RETURN_IF_ERROR(model::MakeModel(options).status());
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  std::filesystem::rename(tmp, dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot move the default model into ", dir, ": ", error.message()));
  }
  return dir;
}

}  // namespace

absl::StatusOr<std::string> ResolveToolModel(const std::string& model) {
  if (model == kTinyPreset) return EnsureTinyModel();
  return model::ResolveModel(model.empty() ? model::kDefaultModelName : model);
}

}  // namespace arbor::tools
