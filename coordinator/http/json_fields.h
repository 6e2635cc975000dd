// The fields of a request body's JSON objects, read by name and type with errors that name the
// field ("messages[1].role: must be a string"), and anything left unread reported as
// unrecognized: the OpenAI request parser's reader (openai_request.h, tool_request.h).
#ifndef ARBOR_COORDINATOR_HTTP_JSON_FIELDS_H_
#define ARBOR_COORDINATOR_HTTP_JSON_FIELDS_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace arbor::coordinator::http {

// An INVALID_ARGUMENT error that starts with the field: "FIELD: PROBLEM".
inline absl::Status FieldError(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

// One JSON object's fields, read by name and type; remembers what was read so that anything
// left over can be reported as unrecognized.
class Fields {
 public:
  using json = nlohmann::ordered_json;

  Fields(const json& object, std::string prefix) : object_(object), prefix_(std::move(prefix)) {}

  std::string Name(absl::string_view key) const { return absl::StrCat(prefix_, key); }

  // Null and absent are the same (clients write `"stop": null`).
  const json* Get(absl::string_view key) {
    read_.insert(std::string(key));
    const auto it = object_.find(std::string(key));
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  absl::StatusOr<std::optional<int64_t>> Int(absl::string_view key, int64_t lo, int64_t hi) {
    const json* v = Get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) return FieldError(Name(key), "must be an integer");
    const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX
                          ? std::numeric_limits<int64_t>::max()
                          : v->get<int64_t>();
    if (x < lo || x > hi) {
      return FieldError(Name(key), absl::StrCat("must be in [", lo, ", ", hi, "], got ", x));
    }
    return x;
  }

  absl::StatusOr<std::optional<double>> Number(absl::string_view key, double lo, double hi) {
    const json* v = Get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) return FieldError(Name(key), "must be a number");
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi)) {
      return FieldError(Name(key), absl::StrCat("must be in [", lo, ", ", hi, "], got ", x));
    }
    return x;
  }

  absl::StatusOr<std::optional<bool>> Bool(absl::string_view key) {
    const json* v = Get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) return FieldError(Name(key), "must be true or false");
    return v->get<bool>();
  }

  absl::StatusOr<std::optional<std::string>> String(absl::string_view key) {
    const json* v = Get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) return FieldError(Name(key), "must be a string");
    return v->get<std::string>();
  }

  absl::StatusOr<const json*> Object(absl::string_view key) {
    const json* v = Get(key);
    if (v != nullptr && !v->is_object()) return FieldError(Name(key), "must be an object");
    return v;
  }

  absl::Status NothingElse() const {
    for (const auto& [key, value] : object_.items()) {
      if (!read_.contains(key)) {
        return FieldError(Name(key), "unrecognized request argument (see docs/HTTP.md)");
      }
    }
    return absl::OkStatus();
  }

 private:
  const json& object_;
  const std::string prefix_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_JSON_FIELDS_H_
