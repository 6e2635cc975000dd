#include "model/tokenizer/normalizer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"

namespace arbor::model {

using nlohmann::json;

absl::StatusOr<Normalizer> Normalizer::FromJson(const json& json) {
  Normalizer normalizer;
  if (!json.is_null()) RETURN_IF_ERROR(normalizer.AddStep(json, "normalizer"));
  return normalizer;
}

absl::Status Normalizer::AddStep(const json& step, const std::string& where) {
  if (!step.is_object() || !step.contains("type") || !step["type"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " must be an object with a \"type\""));
  }
  const std::string type = step["type"].get<std::string>();
  if (type == "Sequence") {
    if (!step.contains("normalizers") || !step["normalizers"].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".normalizers must be an array"));
    }
    for (size_t i = 0; i < step["normalizers"].size(); ++i) {
      RETURN_IF_ERROR(
          AddStep(step["normalizers"][i], absl::StrCat(where, ".normalizers[", i, "]")));
    }
    return absl::OkStatus();
  }
  if (type == "Prepend") {
    if (!step.contains("prepend") || !step["prepend"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".prepend must be a string"));
    }
    steps_.push_back({true, "", step["prepend"].get<std::string>()});
    return absl::OkStatus();
  }
  if (type == "Replace") {
    const bool literal = step.contains("pattern") && step["pattern"].is_object() &&
                         step["pattern"].contains("String") &&
                         step["pattern"]["String"].is_string();
    if (!literal) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported tokenizer: ", where, ".pattern (only {\"String\": ...} is supported)"));
    }
    if (!step.contains("content") || !step["content"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".content must be a string"));
    }
    const std::string pattern = step["pattern"]["String"].get<std::string>();
    if (pattern.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".pattern must not be empty"));
    }
    steps_.push_back({false, pattern, step["content"].get<std::string>()});
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported tokenizer: ", where, " of type '", type, "'"));
}

std::string Normalizer::Apply(absl::string_view text) const {
  std::string out(text);
  for (const Step& step : steps_) {
    if (step.prepend) {
      if (!out.empty()) out.insert(0, step.content);
    } else {
      out = absl::StrReplaceAll(out, {{step.pattern, step.content}});
    }
  }
  return out;
}

}  // namespace arbor::model
