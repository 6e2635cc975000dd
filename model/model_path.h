// What a model path names: a Hugging Face model directory or a single (GGUF) file. Checkpoints
// and model identities read a path the same way, so a missing one is refused in the same words.
#ifndef ARBOR_MODEL_MODEL_PATH_H_
#define ARBOR_MODEL_MODEL_PATH_H_

#include <string>

#include "absl/status/statusor.h"

namespace arbor::model {

// True for a directory, false for a file; NOT_FOUND saying what a model path should be.
absl::StatusOr<bool> IsModelDirectory(const std::string& path);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_MODEL_PATH_H_
