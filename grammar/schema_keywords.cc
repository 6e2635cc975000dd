// The keyword tables and type choice of schema_keywords.h.
#include "grammar/schema_keywords.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "grammar/exact_json.h"
#include "grammar/schema_error.h"
#include "grammar/string_keywords.h"

namespace arbor::grammar {
namespace {

using Json = nlohmann::ordered_json;

struct Keyword {
  const char* name;
  const char* type;  // The instances it restricts ("" for all): what a schema without `type` is.
};

// The keywords compiled, in the order a schema without `type` infers its types from them.
constexpr Keyword kKeywords[] = {
    {"type", ""},
    {"enum", ""},
    {"const", ""},
    {"anyOf", ""},
    {"oneOf", ""},
    {"allOf", ""},
    {"if", ""},
    {"then", ""},
    {"else", ""},
    {"$ref", ""},
    {"properties", "object"},
    {"required", "object"},
    {"additionalProperties", "object"},
    {"unevaluatedProperties", "object"},
    {"items", "array"},
    {"prefixItems", "array"},
    {"minItems", "array"},
    {"maxItems", "array"},
    {"unevaluatedItems", "array"},
    {"minimum", "number"},
    {"maximum", "number"},
    {"exclusiveMinimum", "number"},
    {"exclusiveMaximum", "number"},
    {"multipleOf", "number"},
    {"minLength", "string"},
    {"maxLength", "string"},
    {"pattern", "string"},
    {"format", "string"}};

// Keywords not compiled that restrict one type only.
constexpr Keyword kOneTypeKeywords[] = {
    {"contains", "array"},
    {"minContains", "array"},       {"maxContains", "array"},
    {"uniqueItems", "array"},
    {"patternProperties", "object"}, {"propertyNames", "object"},
    {"dependentSchemas", "object"},
    {"dependentRequired", "object"}, {"minProperties", "object"},
    {"dependencies", "object"},  // Draft 2019's dependentRequired and dependentSchemas in one.
    {"maxProperties", "object"}};

const Keyword* Find(absl::Span<const Keyword> keywords, absl::string_view name) {
  for (const Keyword& keyword : keywords) {
    if (name == keyword.name) return &keyword;
  }
  return nullptr;
}

absl::Status NotSupported(const std::string& pointer, absl::string_view key,
                          absl::string_view context) {
  std::vector<std::string> names;
  for (const Keyword& keyword : kKeywords) names.emplace_back(keyword.name);
  return SchemaError(pointer, absl::StrCat("keyword '", key, "' is not supported", context,
                                           " (supported: ", absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<std::vector<std::string>> DeclaredTypes(const Json& schema,
                                                       const std::string& pointer) {
  static const absl::flat_hash_set<std::string> kNames = {
      "object", "array", "string", "number", "integer", "boolean", "null"};
  std::vector<std::string> types;
  const Json& type = schema["type"];
  const std::string at = ChildPointer(pointer, "type");
  if (type.is_string()) {
    types.push_back(type.get<std::string>());
  } else if (type.is_array() && !type.empty()) {
    for (const Json& t : type) {
      if (!t.is_string()) return SchemaError(at, "type: a list must hold type names");
      types.push_back(t.get<std::string>());
    }
  } else {
    return SchemaError(at, "type: must be a type name or a non-empty list of them");
  }
  for (const std::string& t : types) {
    if (!kNames.contains(t)) return SchemaError(at, absl::StrCat("type: '", t, "' is not a JSON type"));
  }
  // Integers are numbers: beside "number", "integer" adds nothing to generate.
  if (std::find(types.begin(), types.end(), "number") != types.end()) {
    std::erase(types, "integer");
  }
  return types;
}

// The types `not` rules out of what is generated: those its schema may accept (by its `type`,
// `enum` or `const`; integers as numbers, since a number generated may be whole), whose values
// the `not` might refuse. Refused by name when its schema may accept values of every type.
absl::StatusOr<std::vector<std::string>> NotTypes(const Json& negated, const std::string& pointer) {
  const std::bitset<kJsonTypes> accepted = TypesLetThrough(negated);
  if (accepted.all()) {
    return NotSupported(pointer, "not", " (beyond a `not` of types, values or nothing)");
  }
  std::vector<std::string> types;
  for (size_t t = 0; t < kJsonTypes; ++t) {
    if (accepted[t]) types.emplace_back(kJsonTypeNames[t]);
  }
  return types;
}

}  // namespace

bool IsAnnotation(absl::string_view key) {
  static const auto* const kSet = new absl::flat_hash_set<std::string>{
      "title",           "description",      "default",       "examples",  "$schema", "$anchor",
      "$dynamicAnchor",
      "$id",             "$comment",         "deprecated",    "readOnly",  "writeOnly",
      "$defs",           "definitions",      "contentMediaType", "contentEncoding",
      "contentSchema"};
  return kSet->contains(key);
}

bool IsCompiledKeyword(absl::string_view key) { return Find(kKeywords, key) != nullptr; }

absl::StatusOr<std::vector<std::string>> InstanceTypes(const Json& schema,
                                                       const std::string& pointer) {
  std::vector<std::string> excluded;
  std::string first_excluding, first_type;
  std::string why;  // Why the first excluding keyword is not compiled, when it says.
  for (const auto& [key, unused] : schema.items()) {
    // A pattern outside the subset, an unknown format: compiled keywords that restrict strings
    // only, so strings are not generated.
    if (key == "pattern" || key == "format") {
      if (const absl::Status check = CheckStringKeyword(schema, key); !check.ok()) {
        excluded.push_back("string");
        if (first_excluding.empty()) {
          first_excluding = key;
          why = std::string(check.message());
        }
        if (first_type.empty()) first_type = "string";
      }
      continue;
    }
    if (IsAnnotation(key) || IsCompiledKeyword(key)) continue;
    if (key == "not") {
      ASSIGN_OR_RETURN(const std::vector<std::string> types, NotTypes(schema["not"], pointer));
      excluded.insert(excluded.end(), types.begin(), types.end());
      if (first_excluding.empty() && !types.empty()) {
        first_excluding = key;
        first_type = types[0];
      }
      continue;
    }
    const Keyword* one_type = Find(kOneTypeKeywords, key);
    if (one_type == nullptr) return NotSupported(pointer, key, "");
    excluded.push_back(one_type->type);
    if (first_excluding.empty()) first_excluding = key;
    if (first_type.empty()) first_type = one_type->type;
  }
  std::vector<std::string> types;
  if (schema.contains("type")) {
    ASSIGN_OR_RETURN(types, DeclaredTypes(schema, pointer));
  } else {
    for (const Keyword& keyword : kKeywords) {
      if (*keyword.type != '\0' && schema.contains(keyword.name) &&
          std::find(types.begin(), types.end(), keyword.type) == types.end() &&
          std::find(excluded.begin(), excluded.end(), keyword.type) == excluded.end()) {
        types.push_back(keyword.type);
      }
    }
    if (types.empty()) types.assign(std::begin(kJsonTypeNames), std::end(kJsonTypeNames));
  }
  std::erase_if(types, [&](const std::string& t) {
    const std::string as = t == "integer" ? "number" : t;
    return std::find(excluded.begin(), excluded.end(), as) != excluded.end();
  });
  if (types.empty() && !why.empty()) {
    return SchemaError(ChildPointer(pointer, first_excluding),
                       absl::StrCat(why, "; the schema allows no type but strings"));
  }
  if (types.empty()) {
    return NotSupported(pointer, first_excluding,
                        absl::StrCat(" on ", first_type, "s, and the schema allows no other type"));
  }
  return types;
}

std::bitset<kJsonTypes> TypesLetThrough(const Json& schema) {
  std::bitset<kJsonTypes> types;
  if (!schema.is_object()) return schema == Json(false) ? types : types.set();
  types.set();
  // The types of kJsonTypeNames for which `keep` holds.
  auto only = [](auto keep) {
    std::bitset<kJsonTypes> kept;
    for (size_t t = 0; t < kJsonTypes; ++t) kept[t] = keep(std::string(kJsonTypeNames[t]));
    return kept;
  };
  auto listed = [](const Json& list) {
    return [&list](const std::string& t) {
      return std::any_of(list.begin(), list.end(), [&](const Json& v) { return HasType(v, t); });
    };
  };
  if (schema.contains("type")) {
    if (absl::StatusOr<std::vector<std::string>> declared = DeclaredTypes(schema, "");
        declared.ok()) {
      for (std::string& t : *declared) t = t == "integer" ? "number" : t;
      types &= only([&](const std::string& t) {
        return std::find(declared->begin(), declared->end(), t) != declared->end();
      });
    }
  }
  if (schema.contains("const")) types &= only(listed(Json::array({schema["const"]})));
  if (schema.contains("enum") && schema["enum"].is_array()) types &= only(listed(schema["enum"]));
  // `not` of a schema that accepts everything, or of types (integers leave the other numbers).
  if (schema.contains("not")) {
    const Json& negated = schema["not"];
    if (negated == Json(true) || negated == Json::object()) types.reset();
    bool only_type = negated.is_object() && negated.contains("type");
    for (const auto& [key, unused] : negated.items()) {
      only_type = only_type && (key == "type" || IsAnnotation(key));
    }
    absl::StatusOr<std::vector<std::string>> excluded =
        only_type ? DeclaredTypes(negated, "") : std::vector<std::string>{};
    for (const std::string& t : excluded.value_or(std::vector<std::string>{})) {
      if (t != "integer") types &= ~only([&](const std::string& name) { return name == t; });
    }
  }
  return types;
}

bool HasType(const Json& value, absl::string_view type) {
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  // Exact numbers are beyond 2^53, where every double is an integer.
  if (type == "number") return value.is_number() || IsExactNumber(value);
  if (type == "integer") return value.is_number_integer() || IsExactNumber(value);
  return false;
}

}  // namespace arbor::grammar
