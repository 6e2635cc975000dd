// IsModelDirectory: one stat.
#include "model/model_path.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace arbor::model {

absl::StatusOr<bool> IsModelDirectory(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat(
        path,
        ": no such file or directory (expected a Hugging Face model directory or a .gguf "
        "file)"));
  }
  return S_ISDIR(info.st_mode);
}

}  // namespace arbor::model
