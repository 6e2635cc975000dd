// The per-type split of one_of_split.h.
#include "grammar/one_of_split.h"

#include <algorithm>
#include <bitset>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "grammar/schema_error.h"
#include "grammar/schema_keywords.h"
#include "grammar/schema_merge.h"

namespace arbor::grammar {
namespace {

using Json = nlohmann::ordered_json;
using Types = std::bitset<kJsonTypes>;

constexpr int kMaxDepth = 16;  // Subschemas and references followed (a reference may cycle).
// Subschemas weighed per alternative, however references fan out; past it, what is known so far.
constexpr int kMaxVisits = 4096;

// The types `schema` may accept (a superset of those it does); `visits` counts the subschemas
// weighed.
Types MayAccept(const Json& schema, const Json& root, int depth, int& visits) {
  Types types = TypesLetThrough(schema);
  if (!schema.is_object() || depth > kMaxDepth || ++visits > kMaxVisits) return types;
  if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
    if (const Json* target = FindLocalRef(root, ref->get<std::string>())) {
      types &= MayAccept(*target, root, depth + 1, visits);
    }
  }
  if (auto parts = schema.find("allOf"); parts != schema.end() && parts->is_array()) {
    for (const Json& part : *parts) types &= MayAccept(part, root, depth + 1, visits);
  }
  for (const char* keyword : {"anyOf", "oneOf"}) {
    auto list = schema.find(keyword);
    if (list == schema.end() || !list->is_array()) continue;
    Types any;
    for (const Json& alternative : *list) any |= MayAccept(alternative, root, depth + 1, visits);
    types &= any;
  }
  return types;
}

size_t TypeOf(const Json& value) {
  for (size_t t = 0; t < kJsonTypes; ++t) {
    if (HasType(value, kJsonTypeNames[t])) return t;
  }
  return kJsonTypes;  // Not reached: every JSON value has a type.
}

// The values an alternative lists (its `const`, else its `enum`), when it lists them.
std::optional<Json> ListedValues(const Json* schema) {
  if (schema == nullptr || !schema->is_object()) return std::nullopt;
  if (schema->contains("const")) return Json::array({(*schema)["const"]});
  if (schema->contains("enum") && (*schema)["enum"].is_array()) return (*schema)["enum"];
  return std::nullopt;
}

bool Lists(const Json& values, const Json& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// The keys an alternative's objects are generated with (its declared and required properties),
// when its own keywords fix them; nothing for a map (any keys) or keys from subschemas.
std::optional<absl::flat_hash_set<std::string>> GeneratedKeys(const Json* schema) {
  if (schema == nullptr || !schema->is_object()) return std::nullopt;
  for (const char* keyword : {"$ref", "allOf", "anyOf", "oneOf", "if"}) {
    if (schema->contains(keyword)) return std::nullopt;
  }
  const Json properties = schema->value("properties", Json::object());
  const Json required = schema->value("required", Json::array());
  if (!properties.is_object() || !required.is_array()) return std::nullopt;
  absl::flat_hash_set<std::string> keys;
  for (const auto& [name, unused] : properties.items()) keys.insert(name);
  for (const Json& name : required) {
    if (name.is_string()) keys.insert(name.get<std::string>());
  }
  if (keys.empty()) return std::nullopt;
  return keys;
}

// Whether `schema` requires a key outside `keys` (so it fails every object of those keys only).
bool RequiresOutside(const Json* schema, const absl::flat_hash_set<std::string>& keys) {
  if (schema == nullptr || !schema->is_object()) return false;
  const Json required = schema->value("required", Json::array());
  return required.is_array() && std::any_of(required.begin(), required.end(), [&](const Json& n) {
           return n.is_string() && !keys.contains(n.get<std::string>());
         });
}

// An object whose first property is a constant (discriminated_union.h).
bool Tagged(const Json* schema) {
  if (schema == nullptr || !schema->is_object()) return false;
  const Json properties = schema->value("properties", Json::object());
  return properties.is_object() && !properties.empty() && properties.begin()->is_object() &&
         properties.begin()->contains("const");
}

// What is known of each alternative, and what of it is generated.
struct Alternative {
  const Json* target = nullptr;  // Lone references followed.
  Types may;                     // The types it may accept.
  std::optional<Json> listed;    // The values it lists.
  Types owned;                   // The types generated from it whole.
  Json unique = Json::array();   // Listed values generated though others share their type.
};

// Decides, for the candidates of type `t` (the alternatives that may accept it), which generate
// it: the only one, those whose objects the others' required keys exclude, or the listed values
// no other candidate lists.
void SplitType(size_t t, const std::vector<size_t>& candidates, std::vector<Alternative>& all) {
  if (candidates.size() == 1) {
    all[candidates[0]].owned.set(t);
    return;
  }
  for (size_t i : candidates) {
    const std::optional<absl::flat_hash_set<std::string>> keys = GeneratedKeys(all[i].target);
    if (std::string(kJsonTypeNames[t]) != "object" || !keys) continue;
    if (std::all_of(candidates.begin(), candidates.end(), [&](size_t j) {
          return j == i || RequiresOutside(all[j].target, *keys);
        })) {
      all[i].owned.set(t);
    }
  }
  if (!std::all_of(candidates.begin(), candidates.end(), [&](size_t i) { return all[i].listed; })) {
    return;
  }
  for (size_t i : candidates) {
    for (const Json& value : *all[i].listed) {
      if (TypeOf(value) == t && std::none_of(candidates.begin(), candidates.end(), [&](size_t j) {
            return j != i && Lists(*all[j].listed, value);
          })) {
        all[i].unique.push_back(value);
      }
    }
  }
}

// The schema generated from alternative `schema`: itself, or it with only the values or types
// it generates.
std::optional<Json> Restricted(const Json& schema, const Alternative& alternative) {
  if (alternative.listed) {
    Json values = Json::array();
    for (const Json& value : *alternative.listed) {
      if (alternative.owned[TypeOf(value)] || Lists(alternative.unique, value)) {
        values.push_back(value);
      }
    }
    if (values.empty()) return std::nullopt;
    if (values == *alternative.listed) return schema;
    return Json{{"allOf", Json::array({schema, Json{{"enum", values}}})}};
  }
  if (alternative.owned.none()) return std::nullopt;
  if (alternative.owned == alternative.may) return schema;
  Json names = Json::array();
  for (size_t t = 0; t < kJsonTypes; ++t) {
    if (alternative.owned[t]) names.push_back(kJsonTypeNames[t]);
  }
  return Json{{"allOf", Json::array({schema, Json{{"type", names}}})}};
}

}  // namespace

absl::StatusOr<OneOfSplit> SplitOneOf(const Json& list, const Json& root, const std::string& at) {
  std::vector<Alternative> all(list.size());
  bool tagged = true;
  for (size_t i = 0; i < list.size(); ++i) {
    all[i].target = FollowRefs(list[i], root);
    int visits = 0;
    all[i].may = MayAccept(list[i], root, 0, visits);
    all[i].listed = ListedValues(all[i].target);
    tagged = tagged && Tagged(all[i].target);
  }
  OneOfSplit split{.alternatives = {}, .tagged = tagged};
  if (tagged) {
    for (size_t i = 0; i < list.size(); ++i) split.alternatives.emplace_back(i, list[i]);
    return split;
  }
  for (size_t t = 0; t < kJsonTypes; ++t) {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < list.size(); ++i) {
      if (all[i].may[t]) candidates.push_back(i);
    }
    if (!candidates.empty()) SplitType(t, candidates, all);
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (std::optional<Json> schema = Restricted(list[i], all[i])) {
      split.alternatives.emplace_back(i, *std::move(schema));
    }
  }
  if (split.alternatives.empty()) {
    return SchemaError(at, "oneOf: no value is known to match one alternative only: no JSON type "
                           "is accepted by one alternative alone; give the alternatives "
                           "different types (type, enum or const), or make them objects whose "
                           "first property is required and holds a distinct const string");
  }
  return split;
}

}  // namespace arbor::grammar
