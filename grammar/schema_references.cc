// The reference resolution of schema_references.h.
#include "grammar/schema_references.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "grammar/schema_error.h"
#include "grammar/schema_merge.h"
#include "grammar/uri_reference.h"

namespace arbor::grammar {
namespace {

using Json = nlohmann::ordered_json;

// Keywords whose value is a schema, an object of schemas, or a list of schemas: where resources,
// anchors and references are. The values of other keywords (`enum`, `const`, `examples`, unknown
// ones) are data, even where they look like schemas.
constexpr absl::string_view kSchemaKeywords[] = {
    "additionalProperties", "items", "contains", "propertyNames", "not", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema"};
constexpr absl::string_view kSchemaMapKeywords[] = {"properties", "patternProperties", "$defs",
                                                    "definitions", "dependentSchemas"};
constexpr absl::string_view kSchemaListKeywords[] = {"allOf", "anyOf", "oneOf", "prefixItems"};

template <size_t N>
bool Among(const absl::string_view (&names)[N], absl::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// "uri#fragment" split at its first '#'.
std::pair<std::string, std::optional<std::string>> SplitFragment(const std::string& uri) {
  const size_t hash = uri.find('#');
  if (hash == std::string::npos) return {uri, std::nullopt};
  return {uri.substr(0, hash), uri.substr(hash + 1)};
}

// The local reference to the schema at `pointer`, as FindLocalRef reads it.
std::string LocalRef(const std::string& pointer) {
  return absl::StrCat("#", absl::StrReplaceAll(pointer, {{"%", "%25"}}));
}

class Resolver {
 public:
  explicit Resolver(const Json& root) : root_(root) {}

  absl::StatusOr<Json> Run() {
    resources_.emplace(kRootBaseUri, "");
    Walk(root_, "", kRootBaseUri);
    Json out = root_;
    for (const Reference& reference : references_) {
      ASSIGN_OR_RETURN(const std::string target, Target(reference));
      Json& schema = out[Json::json_pointer(reference.pointer)];
      if (!reference.dynamic) {
        schema["$ref"] = LocalRef(target);
        continue;
      }
      // Beside a `$ref` of its own it joins `allOf` (a malformed one is left for the compiler to
      // refuse, with the `$dynamicRef`).
      const bool beside_ref = root_.at(Json::json_pointer(reference.pointer)).contains("$ref");
      if (beside_ref && schema.contains("allOf") && !schema["allOf"].is_array()) continue;
      schema.erase("$dynamicRef");
      if (beside_ref) {
        schema["allOf"].push_back(Json{{"$ref", LocalRef(target)}});
      } else {
        schema["$ref"] = LocalRef(target);
      }
    }
    return out;
  }

 private:
  struct Reference {
    std::string pointer;  // Of the schema holding it.
    std::string base;     // That schema's base URI.
    bool dynamic;         // `$dynamicRef`, else `$ref`.
  };

  // Indexes the resources, anchors and references of `schema` (at `pointer`), whose parent's
  // base URI is `base`.
  void Walk(const Json& schema, const std::string& pointer, std::string base) {
    if (!schema.is_object()) return;
    if (auto id = schema.find("$id"); id != schema.end() && id->is_string()) {
      // An `$id` with a fragment is not an identifier in draft 2020-12 ("#" aside).
      auto [uri, fragment] = SplitFragment(ResolveUriReference(base, id->get<std::string>()));
      if (fragment.value_or("").empty()) {
        base = std::move(uri);
        Define(resources_, base, pointer);
      }
    }
    if (pointer.empty()) root_base_ = base;
    for (const char* keyword : {"$anchor", "$dynamicAnchor"}) {
      auto name = schema.find(keyword);
      if (name == schema.end() || !name->is_string()) continue;
      Define(anchors_, absl::StrCat(base, "#", name->get<std::string>()), pointer);
      if (std::string(keyword) == "$dynamicAnchor") ++dynamic_anchors_[name->get<std::string>()];
    }
    for (const char* keyword : {"$ref", "$dynamicRef"}) {
      if (schema.contains(keyword) && schema[keyword].is_string()) {
        references_.push_back({pointer, base, std::string(keyword) == "$dynamicRef"});
      }
    }
    for (const auto& [key, value] : schema.items()) {
      const std::string at = ChildPointer(pointer, key);
      if (Among(kSchemaKeywords, key)) {
        Walk(value, at, base);
      } else if (Among(kSchemaMapKeywords, key) && value.is_object()) {
        for (const auto& [name, item] : value.items()) Walk(item, ChildPointer(at, name), base);
      } else if (Among(kSchemaListKeywords, key) && value.is_array()) {
        for (size_t i = 0; i < value.size(); ++i) {
          Walk(value[i], ChildPointer(at, std::to_string(i)), base);
        }
      }
    }
  }

  void Define(absl::flat_hash_map<std::string, std::string>& index, const std::string& key,
              const std::string& pointer) {
    if (!index.emplace(key, pointer).second && index[key] != pointer) ambiguous_.insert(key);
  }

  // The pointer of the schema `reference` names.
  absl::StatusOr<std::string> Target(const Reference& reference) const {
    const char* keyword = reference.dynamic ? "$dynamicRef" : "$ref";
    const std::string at = ChildPointer(reference.pointer, keyword);
    const std::string text =
        root_.at(Json::json_pointer(reference.pointer))[keyword].get<std::string>();
    const auto [uri, fragment] = SplitFragment(ResolveUriReference(reference.base, text));
    const auto resource = resources_.find(uri);
    if (resource == resources_.end()) {
      return SchemaError(at, absl::StrCat(keyword, " '", text, "' names '", uri,
                                          "', which is not in this schema: Arbor does not fetch "
                                          "schemas; bundle the schema it names under $defs, "
                                          "with its $id"));
    }
    const std::string name = PercentDecode(fragment.value_or(""));
    std::string target = resource->second;
    if (!name.empty() && name[0] == '/') {
      target += name;
      if (FindLocalRef(root_, LocalRef(target)) == nullptr) {
        return SchemaError(at, absl::StrCat(keyword, " '", text, "' names nothing in the schema"));
      }
    } else if (!name.empty()) {
      const auto anchor = anchors_.find(absl::StrCat(uri, "#", name));
      if (anchor == anchors_.end()) {
        return SchemaError(at, absl::StrCat(keyword, " '", text, "': no $anchor '", name,
                                            "' in the schema resource '", uri, "'"));
      }
      if (ambiguous_.contains(anchor->first)) {
        return SchemaError(at, absl::StrCat(keyword, " '", text, "': the anchor '", name,
                                            "' is defined twice in '", uri, "'; rename one"));
      }
      target = anchor->second;
    }
    if (ambiguous_.contains(uri)) {
      return SchemaError(at, absl::StrCat(keyword, " '", text, "': the $id '", uri,
                                          "' is given to two subschemas; make them distinct"));
    }
    if (!reference.dynamic || name.empty() || name[0] == '/' ||
        root_.at(Json::json_pointer(target)).value("$dynamicAnchor", Json()) != Json(name) ||
        dynamic_anchors_.at(name) == 1) {
      return target;
    }
    // Evaluation starts at the root, so its resource is the outermost of every dynamic scope:
    // where it has the anchor, that is the one named.
    if (const auto outermost = anchors_.find(absl::StrCat(root_base_, "#", name));
        outermost != anchors_.end() &&
        root_.at(Json::json_pointer(outermost->second)).value("$dynamicAnchor", Json()) ==
            Json(name)) {
      return outermost->second;
    }
    return SchemaError(at, absl::StrCat("keyword '$dynamicRef' is not supported where the schema "
                                        "it names depends on the dynamic scope: '", text,
                                        "' may name any of the ", dynamic_anchors_.at(name),
                                        " schemas with $dynamicAnchor '", name,
                                        "'; use $ref to the one meant"));
  }

  const Json& root_;
  absl::flat_hash_map<std::string, std::string> resources_;  // URI without fragment -> pointer.
  absl::flat_hash_map<std::string, std::string> anchors_;    // "uri#name" -> pointer.
  absl::flat_hash_map<std::string, int> dynamic_anchors_;    // Name -> schemas defining it.
  absl::flat_hash_set<std::string> ambiguous_;  // Resources and anchors defined twice.
  std::string root_base_ = kRootBaseUri;        // The root's resource.
  std::vector<Reference> references_;
};

}  // namespace

absl::StatusOr<Json> ResolveReferences(const Json& root) { return Resolver(root).Run(); }

}  // namespace arbor::grammar
