// The `tiny` model every `--model` flag accepts (arbor up, arbor-worker, arbor-coordinator): the
// random-weight preset of make_model.h, written once into the cache (well under a second, no
// network), so a cluster can start and be tested without fetching a real model.
#ifndef ARBOR_MODEL_TINY_MODEL_H_
#define ARBOR_MODEL_TINY_MODEL_H_

#include <string>

#include "absl/status/statusor.h"

namespace arbor::model {

// What --model accepts for the random-weight preset.
inline constexpr char kTinyModelName[] = "tiny";

// The local path of `model`: `tiny` is the random-weight preset, made first into the cache when
// absent; anything else goes through ResolveModel (model_store.h).
absl::StatusOr<std::string> ResolveModelOrTiny(const std::string& model);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TINY_MODEL_H_
