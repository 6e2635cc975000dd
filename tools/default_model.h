// The model `arbor up` and `arbor demo` use when none is given: the `tiny` preset, made once
// into the user's cache directory and reused afterwards.
#ifndef ARBOR_TOOLS_DEFAULT_MODEL_H_
#define ARBOR_TOOLS_DEFAULT_MODEL_H_

#include <string>

#include "absl/status/statusor.h"

namespace arbor::tools {

// $XDG_CACHE_HOME/arbor, else $HOME/.cache/arbor, else a folder in the temp directory.
std::string CacheDir();

// The directory of the default tiny model, writing it first when absent (well under a second).
absl::StatusOr<std::string> EnsureDefaultModel();

}  // namespace arbor::tools

#endif  // ARBOR_TOOLS_DEFAULT_MODEL_H_
