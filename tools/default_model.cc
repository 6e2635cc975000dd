#include "tools/default_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/make_model.h"

namespace arbor::tools {
namespace {

// Bump when make-model's output changes, so stale cached models are not reused.
constexpr char kDefaultModelName[] = "tiny-seed1-v1";
constexpr uint64_t kDefaultModelSeed = 1;

}  // namespace

std::string CacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/arbor");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/arbor");
  }
  return (std::filesystem::temp_directory_path() / "arbor-cache").string();
}

absl::StatusOr<std::string> EnsureDefaultModel() {
  const std::string dir = absl::StrCat(CacheDir(), "/models/", kDefaultModelName);
  if (std::filesystem::exists(dir + "/model.safetensors") &&
      std::filesystem::exists(dir + "/tokenizer.json")) {
    return dir;
  }
  // Write into a temporary sibling and rename, so an interrupted run leaves nothing half made.
  const std::string tmp = absl::StrCat(dir, ".tmp.", ::getpid());
  model::MakeModelOptions options;
  options.preset = "tiny";
  options.out_dir = tmp;
  options.seed = kDefaultModelSeed;
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

}  // namespace arbor::tools
