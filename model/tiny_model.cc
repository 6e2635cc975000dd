#include "model/tiny_model.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/make_model.h"
#include "model/model_store.h"

namespace arbor::model {
namespace {

// The cache folder's name. Bump when make-model's output changes, so stale cached models are
// not reused.
constexpr char kTinyCacheName[] = "tiny-seed1-v1";
constexpr uint64_t kTinyModelSeed = 1;

bool IsComplete(const std::string& dir) {
  return std::filesystem::exists(dir + "/model.safetensors") &&
         std::filesystem::exists(dir + "/tokenizer.json");
}

// The tiny random-weight preset, written first when absent.
absl::StatusOr<std::string> EnsureTinyModel() {
  const std::string dir = absl::StrCat(CacheDir(), "/models/", kTinyCacheName);
  if (IsComplete(dir)) return dir;
  // Write into a temporary sibling and rename, so an interrupted run leaves nothing half made
  // and processes starting together (a coordinator and its workers) never read a partial one.
  const std::string tmp = absl::StrCat(dir, ".tmp.", ::getpid());
  MakeModelOptions options;
  options.preset = kTinyModelName;
  options.out_dir = tmp;
  options.seed = kTinyModelSeed;
  RETURN_IF_ERROR(MakeModel(options).status());
  std::error_code error;
  if (!IsComplete(dir)) {
    std::filesystem::remove_all(dir, error);  // What an interrupted older run left.
    std::filesystem::rename(tmp, dir, error);
  }
  std::error_code ignored;
  std::filesystem::remove_all(tmp, ignored);  // Another process's identical copy won.
  if (!IsComplete(dir)) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot move the tiny model into ", dir, ": ", error.message(),
                     "; set XDG_CACHE_HOME to a writable folder"));
  }
  return dir;
}

}  // namespace

absl::StatusOr<std::string> ResolveModelOrTiny(const std::string& model) {
  if (model == kTinyModelName) return EnsureTinyModel();
  return ResolveModel(model);
}

}  // namespace arbor::model
