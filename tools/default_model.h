// The model `arbor up` and `arbor demo` serve: what --model names (a GGUF file, a Hugging Face
// directory, a known model name such as smollm2-135m-instruct, or the random-weight preset
// `tiny`), by default SmolLM2-135M-Instruct, fetched once into the cache.
#ifndef ARBOR_TOOLS_DEFAULT_MODEL_H_
#define ARBOR_TOOLS_DEFAULT_MODEL_H_

#include <string>

#include "absl/status/statusor.h"

namespace arbor::tools {

// The local path of `model` (empty: the default model), as model::ResolveModelOrTiny finds it.
absl::StatusOr<std::string> ResolveToolModel(const std::string& model);

}  // namespace arbor::tools

#endif  // ARBOR_TOOLS_DEFAULT_MODEL_H_
