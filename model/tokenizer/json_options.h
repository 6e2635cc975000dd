// The option readers tokenizer.json's parts share (model, added tokens, pre-tokenizers), so that
// every part refuses what Arbor does not implement in the same words.
#ifndef ARBOR_MODEL_TOKENIZER_JSON_OPTIONS_H_
#define ARBOR_MODEL_TOKENIZER_JSON_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arbor::model {

// INVALID_ARGUMENT "unsupported tokenizer: <what>".
absl::Status UnsupportedTokenizer(const std::string& what);

// object[key] as a bool, `fallback` when absent or null; INVALID_ARGUMENT naming `where`.key
// when it is anything else.
absl::StatusOr<bool> OptionalBool(const nlohmann::json& object, const char* key, bool fallback,
                                  const std::string& where);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_JSON_OPTIONS_H_
