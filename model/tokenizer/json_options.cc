// The shared option readers of json_options.h.
#include "model/tokenizer/json_options.h"

#include "absl/strings/str_cat.h"

namespace arbor::model {

absl::Status UnsupportedTokenizer(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("unsupported tokenizer: ", what));
}

absl::StatusOr<bool> OptionalBool(const nlohmann::json& object, const char* key, bool fallback,
                                  const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".", key, " must be a boolean"));
  }
  return it->get<bool>();
}

}  // namespace arbor::model
