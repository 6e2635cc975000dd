// The schema merge of schema_merge.h.
#include "grammar/schema_merge.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "grammar/schema_error.h"
#include "grammar/schema_keywords.h"
#include "grammar/uri_reference.h"

namespace arbor::grammar {
namespace {

using Json = nlohmann::ordered_json;

bool OnlyRef(const Json& schema) {
  if (!schema.is_object() || !schema.contains("$ref")) return false;
  for (const auto& [key, unused] : schema.items()) {
    if (key != "$ref" && !IsAnnotation(key)) return false;
  }
  return true;
}

bool HasOtherKeywords(const Json& schema, const char* keyword) {
  for (const auto& [key, unused] : schema.items()) {
    if (key != keyword && !IsAnnotation(key)) return true;
  }
  return false;
}

// Integer multipleOfs merge into their least common multiple while a double holds it exactly.
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;

bool PositiveInteger(const Json& value) {
  return value.is_number_integer() && value.get<int64_t>() > 0 &&
         value.get<int64_t>() < kMaxExactInteger;
}

// Merges of merges (a part's own allOf, a reference to a schema with one) nest at most this deep.
constexpr int kMaxMergeDepth = 16;
// Merges per schema merged, however references fan out (each part may name a schema that merges
// several more).
constexpr int kMaxMerges = 1000;

// A part as an object schema: a lone local reference replaced by what it names.
absl::StatusOr<Json> Resolve(const Json& schema, const Json& root, const std::string& pointer) {
  const Json* target = FollowRefs(schema, root);
  if (target == nullptr) {
    const Json& ref = schema.at("$ref");
    return SchemaError(pointer, absl::StrCat("allOf: the reference '",
                                             ref.is_string() ? ref.get<std::string>() : ref.dump(),
                                             "' cannot be merged"));
  }
  const Json& part = *target;
  if (part.is_boolean()) {
    if (!part.get<bool>()) {
      return SchemaError(pointer, "allOf: a part is false, so nothing is valid");
    }
    return Json::object();
  }
  if (!part.is_object()) return SchemaError(pointer, "allOf: a part must be a schema");
  return part;
}

// The types both lists allow ("integer" within "number").
Json MeetTypes(const Json& a, const Json& b) {
  auto list = [](const Json& t) { return t.is_array() ? t : Json::array({t}); };
  Json out = Json::array();
  for (const Json& x : list(a)) {
    for (const Json& y : list(b)) {
      if (x == y || (x == "integer" && y == "number")) out.push_back(x);
      if (x == "number" && y == "integer") out.push_back(y);
    }
  }
  return out;
}

// The schema at array position `i` of `side`: its prefixItems' or, past them, its items (nothing
// when it has neither there).
std::optional<Json> ItemAt(const Json& side, size_t i) {
  const Json prefix = side.value("prefixItems", Json::array());
  if (i < prefix.size()) return prefix[i];
  if (side.contains("items")) return side["items"];
  return std::nullopt;
}

// Both schemas at once (false wins, true gives way).
std::optional<Json> Both(const std::optional<Json>& a, const std::optional<Json>& b) {
  if (!a || *a == Json(true)) return b ? b : a;
  if (!b || *b == Json(true) || *a == *b) return a;
  if (*a == Json(false) || *b == Json(false)) return Json(false);
  return Json{{"allOf", Json::array({*a, *b})}};
}

// Applies `extra`, what one part says of properties beyond its declared `names`
// (additionalProperties, or false where its unevaluatedProperties sees none), to `other`'s
// properties beyond them: each takes `extra` too (false: never generated). INVALID_ARGUMENT
// naming `keyword` for such a property `other` requires, when `extra` is false.
absl::Status LimitProperties(const Json& names, const Json& extra, Json& other,
                             const std::string& pointer, const char* keyword) {
  if (extra == Json(true) || !names.is_object()) return absl::OkStatus();
  if (other.contains("properties") && other["properties"].is_object()) {
    for (auto it = other["properties"].begin(); it != other["properties"].end(); ++it) {
      if (!names.contains(it.key())) it.value() = *Both(it.value(), extra);
    }
  }
  const Json required = other.value("required", Json::array());
  for (const Json& name : required.is_array() ? required : Json::array()) {
    if (extra == Json(false) && name.is_string() && !names.contains(name.get<std::string>())) {
      return SchemaError(pointer, absl::StrCat("allOf: ", keyword, " of one part refuses the "
                                               "property '", name.get<std::string>(),
                                               "' another requires; keyword '", keyword,
                                               "' is not supported so"));
    }
  }
  return absl::OkStatus();
}

// `prefixItems` and `items` of both parts merged position by position (each part's `items`
// applies past its own prefixItems only), taken out of `part`. Left to the keyword-by-keyword
// merge when either is malformed (a list as items, prefixItems not a list).
void MergeItems(Json& into, Json& part) {
  for (const Json* side : {&into, &part}) {
    if (side->contains("items") && (*side)["items"].is_array()) return;
    if (side->contains("prefixItems") && !(*side)["prefixItems"].is_array()) return;
  }
  if (!part.contains("prefixItems") && !part.contains("items")) return;
  const size_t length = std::max(into.value("prefixItems", Json::array()).size(),
                                 part.value("prefixItems", Json::array()).size());
  Json prefix = Json::array();
  for (size_t i = 0; i < length; ++i) prefix.push_back(*Both(ItemAt(into, i), ItemAt(part, i)));
  const std::optional<Json> items =
      Both(into.contains("items") ? std::optional<Json>(into["items"]) : std::nullopt,
           part.contains("items") ? std::optional<Json>(part["items"]) : std::nullopt);
  if (!prefix.empty()) into["prefixItems"] = prefix;
  if (items) into["items"] = *items;
  part.erase("prefixItems");
  part.erase("items");
}

// A part's unevaluatedItems and unevaluatedProperties see only what the part evaluates: items
// past its prefixItems when it has no items, properties it does not declare when it has no
// additionalProperties. Those are never generated: a maxItems, and the part's properties noted
// in `evaluated` (the merged schema's keys must be among them). Taken out of `part`.
void TakeUnevaluated(Json& into, Json& part, std::vector<Json>& evaluated) {
  if (part.contains("unevaluatedItems") && part["unevaluatedItems"] != Json(true) &&
      !part.contains("items")) {
    const Json prefix = part.value("prefixItems", Json::array());
    const size_t count = prefix.is_array() ? prefix.size() : 0;
    if (!into.contains("maxItems") ||
        (into["maxItems"].is_number() && into["maxItems"].get<double>() > count)) {
      into["maxItems"] = count;
    }
  }
  if (part.contains("unevaluatedProperties") && part["unevaluatedProperties"] != Json(true) &&
      !part.contains("additionalProperties")) {
    evaluated.push_back(part.value("properties", Json::object()));
  }
  part.erase("unevaluatedItems");
  part.erase("unevaluatedProperties");
}

// Keeps a merged schema's keys within what each part's unevaluatedProperties allows, and allows
// no other (additionalProperties false, which keywords beside a oneOf carry into each
// alternative) when a part limits them.
absl::Status CheckEvaluated(Json& merged, const std::vector<Json>& evaluated,
                            const std::string& pointer) {
  for (const Json& keys : evaluated) {
    RETURN_IF_ERROR(
        LimitProperties(keys, Json(false), merged, pointer, "unevaluatedProperties"));
  }
  if (!evaluated.empty()) merged["additionalProperties"] = false;
  return absl::OkStatus();
}

absl::Status Merge(Json& into, Json part, const std::string& pointer) {
  // Each side's additionalProperties applies to what the other declares beyond its own.
  const Json into_names = into.value("properties", Json::object());
  RETURN_IF_ERROR(LimitProperties(into_names, into.value("additionalProperties", Json(true)), part,
                                  pointer, "additionalProperties"));
  RETURN_IF_ERROR(LimitProperties(part.value("properties", Json::object()),
                                  part.value("additionalProperties", Json(true)), into, pointer,
                                  "additionalProperties"));
  MergeItems(into, part);
  static const char* const kLower[] = {"minimum", "exclusiveMinimum", "minLength", "minItems"};
  static const char* const kUpper[] = {"maximum", "exclusiveMaximum", "maxLength", "maxItems"};
  for (const auto& [key, value] : part.items()) {
    if (!into.contains(key)) {
      into[key] = value;
    } else if (IsAnnotation(key) || into[key] == value) {
      continue;
    } else if (key == "properties" && value.is_object() && into[key].is_object()) {
      for (const auto& [name, schema] : value.items()) {
        into[key][name] = into[key].contains(name) ? *Both(into[key][name], schema) : schema;
      }
    } else if (key == "required" && value.is_array() && into[key].is_array()) {
      for (const Json& name : value) {
        if (std::find(into[key].begin(), into[key].end(), name) == into[key].end()) {
          into[key].push_back(name);
        }
      }
    } else if (key == "type") {
      into[key] = MeetTypes(into[key], value);
      if (into[key].empty()) return SchemaError(pointer, "allOf: the parts' types do not meet");
    } else if (key == "additionalProperties") {
      into[key] = *Both(into[key], value);
    } else if (key == "multipleOf" && PositiveInteger(value) && PositiveInteger(into[key]) &&
               std::lcm(value.get<int64_t>(), into[key].get<int64_t>()) < kMaxExactInteger) {
      into[key] = std::lcm(value.get<int64_t>(), into[key].get<int64_t>());
    } else if (key == "enum" && value.is_array() && into[key].is_array()) {
      Json both = Json::array();
      for (const Json& v : into[key]) {
        if (std::find(value.begin(), value.end(), v) != value.end()) both.push_back(v);
      }
      if (both.empty()) return SchemaError(pointer, "allOf: the parts' enums share no value");
      into[key] = both;
    } else if (value.is_number() && into[key].is_number() &&
               (std::find(std::begin(kLower), std::end(kLower), key) != std::end(kLower) ||
                std::find(std::begin(kUpper), std::end(kUpper), key) != std::end(kUpper))) {
      const bool lower = std::find(std::begin(kLower), std::end(kLower), key) != std::end(kLower);
      if ((value.get<double>() > into[key].get<double>()) == lower) into[key] = value;
    } else {
      return SchemaError(pointer, absl::StrCat("allOf: the parts disagree on keyword '", key,
                                               "', which is not supported so"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const Json* FindLocalRef(const Json& root, const std::string& ref) {
  if (ref.empty() || ref[0] != '#') return nullptr;
  const std::string fragment = PercentDecode(ref.substr(1));
  if (fragment.empty()) return &root;
  try {
    const Json::json_pointer path(fragment);
    return root.contains(path) ? &root.at(path) : nullptr;
  } catch (const Json::exception&) {
    return nullptr;  // Not a valid JSON pointer.
  }
}

bool NeedsMerge(const Json& schema) {
  if (!schema.is_object()) return false;
  if (schema.contains("allOf") || schema.contains("if")) return true;
  if (schema.contains("$ref") && HasOtherKeywords(schema, "$ref")) return true;
  for (const char* keyword : {"anyOf", "oneOf"}) {
    if (schema.contains(keyword) && HasOtherKeywords(schema, keyword)) return true;
  }
  return false;
}

const Json* FollowRefs(const Json& schema, const Json& root) {
  const Json* target = &schema;
  for (int hops = 0; target != nullptr && OnlyRef(*target); ++hops) {
    const Json& ref = (*target)["$ref"];
    target = hops < 8 && ref.is_string() ? FindLocalRef(root, ref.get<std::string>()) : nullptr;
  }
  return target;
}

namespace {

// MergeSchema at `depth` merges of merges, with `merges_left` for the whole of it.
absl::StatusOr<Json> MergeWithin(const Json& schema, const Json& root, const std::string& pointer,
                                 int depth, int& merges_left) {
  if (depth > kMaxMergeDepth || --merges_left < 0) {
    return SchemaError(pointer, absl::StrCat("allOf: references lead back into the merge too "
                                             "often, or fan out into more than ", kMaxMerges,
                                             " merges; flatten the allOf chain"));
  }
  // The schema's own keywords, then each part's.
  Json merged = schema;
  for (const char* key : {"allOf", "if", "then", "else", "$ref"}) merged.erase(key);
  std::vector<Json> parts;
  if (schema.contains("$ref")) parts.push_back(Json{{"$ref", schema["$ref"]}});
  if (schema.contains("allOf")) {
    if (!schema["allOf"].is_array() || schema["allOf"].empty()) {
      return SchemaError(ChildPointer(pointer, "allOf"), "allOf: must be a non-empty list");
    }
    for (const Json& part : schema["allOf"]) parts.push_back(part);
  }
  // `if: false` always takes `else`; otherwise instances of `if` take `then`.
  if (schema.contains("if") && schema["if"] == Json(false)) {
    if (schema.contains("else")) parts.push_back(schema["else"]);
  } else if (schema.contains("if")) {
    parts.push_back(schema["if"]);
    if (schema.contains("then")) parts.push_back(schema["then"]);
  }
  std::vector<Json> evaluated;  // Per part whose unevaluatedProperties limits the keys: them.
  for (const Json& part : parts) {
    ASSIGN_OR_RETURN(Json resolved, Resolve(part, root, pointer));
    // A part's own allOf, conditional or reference siblings merge first.
    if (NeedsMerge(resolved)) {
      ASSIGN_OR_RETURN(resolved, MergeWithin(resolved, root, pointer, depth + 1, merges_left));
    }
    TakeUnevaluated(merged, resolved, evaluated);
    RETURN_IF_ERROR(Merge(merged, std::move(resolved), pointer));
  }
  RETURN_IF_ERROR(CheckEvaluated(merged, evaluated, pointer));
  // Keywords beside anyOf/oneOf go into each alternative.
  for (const char* keyword : {"anyOf", "oneOf"}) {
    if (!merged.contains(keyword) || !HasOtherKeywords(merged, keyword)) continue;
    if (!merged[keyword].is_array()) return SchemaError(pointer, "anyOf: must be a list");
    Json rest = merged;
    rest.erase(keyword);
    // The unevaluated keywords stay beside: they see what each alternative evaluates.
    Json beside = Json::object();
    for (const char* key : {"unevaluatedItems", "unevaluatedProperties"}) {
      if (rest.contains(key)) beside[key] = rest[key];
      rest.erase(key);
    }
    Json alternatives = Json::array();
    for (const Json& alternative : merged[keyword]) {
      Json each = beside;
      each["allOf"] = Json::array({rest, alternative});
      ASSIGN_OR_RETURN(Json flat, MergeWithin(each, root, pointer, depth + 1, merges_left));
      alternatives.push_back(flat);
    }
    return Json{{keyword, alternatives}};
  }
  return merged;
}

}  // namespace

absl::StatusOr<Json> MergeSchema(const Json& schema, const Json& root,
                                 const std::string& pointer) {
  int merges_left = kMaxMerges;
  return MergeWithin(schema, root, pointer, 0, merges_left);
}

}  // namespace arbor::grammar
