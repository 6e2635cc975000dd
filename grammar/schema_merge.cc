// The schema merge of schema_merge.h.
#include "grammar/schema_merge.h"

#include <algorithm>
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

// Merges of merges (a part's own allOf, a reference to a schema with one) nest at most this deep.
constexpr int kMaxMergeDepth = 16;

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

// Whether an additionalProperties of `a` would refuse a property `b` declares or requires.
bool Conflicts(const Json& a, const Json& b) {
  if (!a.contains("additionalProperties") || a["additionalProperties"] == Json(true)) return false;
  const Json declared = a.value("properties", Json::object());
  auto outside = [&](const std::string& name) { return !declared.contains(name); };
  const Json properties = b.value("properties", Json::object());
  const Json required = b.value("required", Json::array());
  for (const auto& [name, unused] : properties.items()) {
    if (outside(name)) return true;
  }
  for (const Json& name : required) {
    if (name.is_string() && outside(name.get<std::string>())) return true;
  }
  return false;
}

// Whether `items` of one would apply to positions the other's prefixItems gives (items follows
// its own part's prefixItems only).
bool ItemsConflict(const Json& a, const Json& b) {
  if (!(a.contains("items") && b.contains("prefixItems")) &&
      !(b.contains("items") && a.contains("prefixItems"))) {
    return false;
  }
  return a.value("prefixItems", Json()) != b.value("prefixItems", Json());
}

absl::Status Merge(Json& into, const Json& part, const std::string& pointer) {
  if (Conflicts(into, part) || Conflicts(part, into)) {
    return SchemaError(pointer, "allOf: additionalProperties of one part refuses properties "
                                "of another; keyword 'additionalProperties' is not supported so");
  }
  if (ItemsConflict(into, part)) {
    return SchemaError(pointer, "allOf: items of one part and prefixItems of another; keyword "
                                "'items' is not supported so");
  }
  static const char* const kLower[] = {"minimum", "exclusiveMinimum", "minLength", "minItems"};
  static const char* const kUpper[] = {"maximum", "exclusiveMaximum", "maxLength", "maxItems"};
  for (const auto& [key, value] : part.items()) {
    if (!into.contains(key)) {
      into[key] = value;
    } else if (IsAnnotation(key) || into[key] == value) {
      continue;
    } else if (key == "properties" && value.is_object() && into[key].is_object()) {
      for (const auto& [name, schema] : value.items()) {
        into[key][name] = into[key].contains(name)
                              ? Json{{"allOf", Json::array({into[key][name], schema})}}
                              : schema;
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
    } else if ((key == "items" || key == "additionalProperties") && value.is_object()) {
      into[key] = Json{{"allOf", Json::array({into[key], value})}};
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

absl::StatusOr<Json> MergeSchema(const Json& schema, const Json& root, const std::string& pointer,
                                 int depth) {
  if (depth > kMaxMergeDepth) {
    return SchemaError(pointer, "allOf: references lead back into the merge too often");
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
  if (schema.contains("if")) {
    parts.push_back(schema["if"]);
    if (schema.contains("then")) parts.push_back(schema["then"]);
  }
  for (const Json& part : parts) {
    ASSIGN_OR_RETURN(Json resolved, Resolve(part, root, pointer));
    // A part's own allOf, conditional or reference siblings merge first.
    if (NeedsMerge(resolved)) {
      ASSIGN_OR_RETURN(resolved, MergeSchema(resolved, root, pointer, depth + 1));
    }
    RETURN_IF_ERROR(Merge(merged, resolved, pointer));
  }
  // Keywords beside anyOf/oneOf go into each alternative.
  for (const char* keyword : {"anyOf", "oneOf"}) {
    if (!merged.contains(keyword) || !HasOtherKeywords(merged, keyword)) continue;
    if (!merged[keyword].is_array()) return SchemaError(pointer, "anyOf: must be a list");
    Json rest = merged;
    rest.erase(keyword);
    Json alternatives = Json::array();
    for (const Json& alternative : merged[keyword]) {
      Json each = Json{{"allOf", Json::array({rest, alternative})}};
      ASSIGN_OR_RETURN(Json flat, MergeSchema(each, root, pointer, depth + 1));
      alternatives.push_back(flat);
    }
    return Json{{keyword, alternatives}};
  }
  return merged;
}

}  // namespace arbor::grammar
