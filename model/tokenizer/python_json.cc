#include "model/tokenizer/python_json.h"

#include "absl/strings/str_cat.h"

namespace arbor::model {
namespace {

void Dump(const nlohmann::ordered_json& value, int indent, int level, std::string& out) {
  const bool is_object = value.is_object();
  if (!is_object && !value.is_array()) {
    // Scalars: nlohmann writes strings (non-ASCII kept, control characters as lower-case
    // \u00xx), integers and shortest round-trip doubles as Python does.
    out += value.dump(-1, ' ', /*ensure_ascii=*/false,
                      nlohmann::ordered_json::error_handler_t::replace);
    return;
  }
  if (value.empty()) {
    out += is_object ? "{}" : "[]";
    return;
  }
  out += is_object ? '{' : '[';
  const std::string inner =
      indent < 0 ? "" : absl::StrCat("\n", std::string((level + 1) * indent, ' '));
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!first) out += indent < 0 ? ", " : ",";
    first = false;
    out += inner;
    if (is_object) {
      out += nlohmann::ordered_json(it.key()).dump(
          -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      out += ": ";
    }
    Dump(*it, indent, level + 1, out);
  }
  if (indent >= 0) absl::StrAppend(&out, "\n", std::string(level * indent, ' '));
  out += is_object ? '}' : ']';
}

}  // namespace

std::string PythonJsonDumps(const nlohmann::ordered_json& value, int indent) {
  std::string out;
  Dump(value, indent, 0, out);
  return out;
}

}  // namespace arbor::model
