// The exact-number JSON reader and writer of exact_json.h: a SAX handler that builds the
// document as nlohmann's own DOM parser does, but sees each number's literal text.
#include "grammar/exact_json.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace arbor::grammar {
namespace {

using Json = nlohmann::ordered_json;

// Doubles from 2^53 on skip integers: such a literal would not survive a round trip.
constexpr double kExactLimit = 9007199254740992.0;

class ExactBuilder {
 public:
  explicit ExactBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return Put(Json(nullptr)); }
  bool boolean(bool value) { return Put(Json(value)); }
  bool number_integer(Json::number_integer_t value) { return Put(Json(value)); }
  bool number_unsigned(Json::number_unsigned_t value) { return Put(Json(value)); }
  bool number_float(Json::number_float_t value, const std::string& literal) {
    if (std::isfinite(value) && std::fabs(value) < kExactLimit) return Put(Json(value));
    return Put(Json::binary(Json::binary_t::container_type(literal.begin(), literal.end()),
                            kExactNumberSubtype));
  }
  bool string(std::string& value) { return Put(Json(std::move(value))); }
  bool binary(Json::binary_t& value) { return Put(Json::binary(std::move(value))); }
  bool start_object(std::size_t) { return Open(Json::object()); }
  bool key(std::string& key) {
    key_ = std::move(key);
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = absl::StrCat("not valid JSON: ", e.what());
    return false;
  }

  Json& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  // Where the next value goes. Pointers into open containers stay valid: only the innermost
  // open container grows. An object's keys are found through its own index, not the ordered
  // map's linear search, which would make a wide object quadratic; a repeated key keeps the
  // last value, as nlohmann's parser does.
  Json* Put(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& top = *open_.back();
    if (top.is_array()) {
      top.push_back(std::move(value));
      return &top.back();
    }
    auto& members = top.get_ref<Json::object_t&>();
    const auto [at, added] = keys_.back().try_emplace(key_, members.size());
    if (!added) {
      Json& slot = (members.begin() + at->second)->second;
      slot = std::move(value);
      return &slot;
    }
    members.emplace_back(key_, std::move(value));
    return &members.back().second;
  }
  bool Open(Json container) {
    if (static_cast<int>(open_.size()) >= max_depth_) {
      error_ = absl::StrCat("nested deeper than ", max_depth_, " levels of objects and arrays");
      return false;
    }
    open_.push_back(Put(std::move(container)));
    keys_.emplace_back();
    return true;
  }
  bool Close() {
    open_.pop_back();
    keys_.pop_back();
    return true;
  }

  const int max_depth_;
  Json root_;
  std::vector<Json*> open_;
  std::vector<absl::flat_hash_map<std::string, size_t>> keys_;  // Per open container (objects).
  std::string key_;
  std::string error_;
};

void Dump(const Json& value, std::string& out) {
  if (IsExactNumber(value)) {
    out.append(value.get_binary().begin(), value.get_binary().end());
  } else if (value.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, member] : value.items()) {
      if (!first) out += ',';
      first = false;
      out += Json(key).dump();
      out += ':';
      Dump(member, out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (size_t i = 0; i < value.size(); ++i) {
      if (i > 0) out += ',';
      Dump(value[i], out);
    }
    out += ']';
  } else {
    out += value.dump();
  }
}

}  // namespace

absl::StatusOr<Json> ParseExactJson(absl::string_view text, int max_depth) {
  ExactBuilder builder(max_depth);
  bool parsed = false;
  try {
    parsed = Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const Json::exception& e) {  // Thrown for what the SAX events cannot report.
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", e.what()));
  }
  if (!parsed) {
    return absl::InvalidArgumentError(builder.error().empty() ? "not valid JSON"
                                                              : builder.error());
  }
  return std::move(builder.root());
}

bool IsExactNumber(const Json& value) {
  return value.is_binary() && value.get_binary().has_subtype() &&
         value.get_binary().subtype() == kExactNumberSubtype;
}

std::string DumpExactJson(const Json& value) {
  std::string out;
  Dump(value, out);
  return out;
}

}  // namespace arbor::grammar
