#include "grammar/json_grammar.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "grammar/discriminated_union.h"
#include "grammar/exact_json.h"
#include "grammar/finite_instances.h"
#include "grammar/json_matcher.h"
#include "grammar/one_of_split.h"
#include "grammar/schema_error.h"
#include "grammar/schema_keywords.h"
#include "grammar/schema_merge.h"
#include "grammar/schema_references.h"
#include "grammar/string_keywords.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {
namespace {

// Declared order matters (properties are generated in it), so the schema keeps its key order.
using Json = nlohmann::ordered_json;

constexpr int kMaxItemsBound = 65535;  // Item counts live in a Frame's 16 bits.

// Adds the first bytes of `index` to `out`; false on a cycle through unions.
bool FirstOf(const JsonGrammar& grammar, int32_t index, absl::flat_hash_set<int32_t>& visiting,
             std::bitset<256>& out) {
  const Node& node = grammar.nodes[index];
  switch (node.kind) {
    case NodeKind::kObject:
    case NodeKind::kDiscriminated:
      out.set('{');
      return true;
    case NodeKind::kArray:
      out.set('[');
      return true;
    case NodeKind::kString:
      out.set('"');
      return true;
    case NodeKind::kNumber:
    case NodeKind::kInteger:
      out |= NumberFirstBytes(node.bounds);
      return true;
    case NodeKind::kLiterals:
      for (const std::string& literal : node.literals) {
        out.set(static_cast<unsigned char>(literal[0]));
      }
      return true;
    case NodeKind::kUnion:
      if (!visiting.insert(index).second) return false;
      for (int32_t alternative : node.alternatives) {
        if (!FirstOf(grammar, alternative, visiting, out)) return false;
      }
      visiting.erase(index);
      return true;
  }
  return true;
}

// The names `required` lists (none without it).
absl::StatusOr<absl::flat_hash_set<std::string>> RequiredNames(const Json& schema,
                                                               const std::string& pointer) {
  absl::flat_hash_set<std::string> required;
  if (!schema.contains("required")) return required;
  const std::string at = ChildPointer(pointer, "required");
  const Json& list = schema["required"];
  if (!list.is_array()) return SchemaError(at, "required: must be a list");
  for (const Json& name : list) {
    if (!name.is_string()) return SchemaError(at, "required: must list property names");
    required.insert(name.get<std::string>());
  }
  return required;
}

class Compiler {
 public:
  explicit Compiler(const Json& root) : root_(root) {}

  absl::StatusOr<JsonGrammar> Run() {
    ASSIGN_OR_RETURN(grammar_.root, Compile(root_, "", 0));
    RETURN_IF_ERROR(CheckUnions());
    RETURN_IF_ERROR(CheckFinite());
    FillFirstBytes();
    IndexNames();
    RETURN_IF_ERROR(FilterLiterals());
    return std::move(grammar_);
  }

  JsonGrammar AnyObject() {
    grammar_.root = Add(Node{.kind = NodeKind::kObject, .free_form = true}).value();
    AnyValue().IgnoreError();
    FillFirstBytes();
    IndexNames();
    return std::move(grammar_);
  }

 private:
  // `pointer`: where the node's schema is, for errors found once the graph is whole.
  absl::StatusOr<int32_t> Add(Node node, absl::string_view pointer = "") {
    if (grammar_.nodes.size() >= kMaxGrammarNodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("the schema compiles to more than ", kMaxGrammarNodes, " nodes"));
    }
    grammar_.nodes.push_back(std::move(node));
    pointers_.emplace_back(pointer);
    return static_cast<int32_t>(grammar_.nodes.size() - 1);
  }

  absl::StatusOr<int32_t> AnyString() {
    if (grammar_.any_string < 0) {
      ASSIGN_OR_RETURN(grammar_.any_string, Add(Node{.kind = NodeKind::kString}));
    }
    return grammar_.any_string;
  }

  // Any JSON value: a union over the six types, free-form objects and arrays of any values.
  absl::StatusOr<int32_t> AnyValue() {
    if (grammar_.any_value >= 0) return grammar_.any_value;
    ASSIGN_OR_RETURN(const int32_t any, Add(Node{.kind = NodeKind::kUnion}));
    grammar_.any_value = any;
    ASSIGN_OR_RETURN(const int32_t object, Add(Node{.kind = NodeKind::kObject, .free_form = true}));
    ASSIGN_OR_RETURN(const int32_t array, Add(Node{.kind = NodeKind::kArray, .items = any}));
    ASSIGN_OR_RETURN(const int32_t string, AnyString());
    ASSIGN_OR_RETURN(const int32_t number, Add(Node{.kind = NodeKind::kNumber}));
    ASSIGN_OR_RETURN(const int32_t literals,
                     Add(Node{.kind = NodeKind::kLiterals, .literals = {"true", "false", "null"}}));
    grammar_.nodes[any].alternatives = {object, array, string, number, literals};
    return any;
  }

  absl::StatusOr<int32_t> Compile(const Json& schema, const std::string& pointer, int depth) {
    if (depth > kMaxSchemaDepth) return SchemaError(pointer, "schemas nest too deeply");
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return AnyValue();
      return SchemaError(pointer, "the schema false accepts nothing");
    }
    if (!schema.is_object()) return SchemaError(pointer, "a schema must be an object or a boolean");
    if (NeedsMerge(schema)) {
      ASSIGN_OR_RETURN(const Json merged, MergeSchema(schema, root_, pointer));
      return Compile(merged, pointer, depth + 1);
    }
    if (schema.contains("$ref")) return Ref(schema, pointer, depth);
    if (schema.contains("anyOf") || schema.contains("oneOf")) {
      return Alternatives(schema, pointer, depth);
    }
    if (schema.contains("enum") || schema.contains("const")) return Literals(schema, pointer, depth);
    ASSIGN_OR_RETURN(std::vector<std::string> types, InstanceTypes(schema, pointer));
    if (types.size() == kJsonTypes) return AnyValue();
    std::vector<int32_t> nodes;
    for (const std::string& type : types) {
      ASSIGN_OR_RETURN(const int32_t node, Typed(schema, type, pointer, depth));
      nodes.push_back(node);
    }
    if (nodes.size() == 1) return nodes[0];
    return Add(Node{.kind = NodeKind::kUnion, .alternatives = std::move(nodes)}, pointer);
  }

  absl::StatusOr<int32_t> Typed(const Json& schema, const std::string& type,
                                const std::string& pointer, int depth) {
    if (type == "object") return Object(schema, pointer, depth);
    if (type == "array") return Array(schema, pointer, depth);
    if (type == "string") {
      ASSIGN_OR_RETURN(std::optional<StringAutomaton> text, CompileStringKeywords(schema, pointer));
      if (!text) return AnyString();
      grammar_.texts.push_back(*std::move(text));
      return Add(Node{.kind = NodeKind::kString,
                      .text = static_cast<int32_t>(grammar_.texts.size() - 1)});
    }
    if (type == "number" || type == "integer") {
      const bool integer = type == "integer";
      ASSIGN_OR_RETURN(NumberBounds bounds, ParseNumberBounds(schema, pointer, integer));
      return Add(Node{.kind = integer ? NodeKind::kInteger : NodeKind::kNumber, .bounds = bounds});
    }
    if (type == "boolean")
      return Add(Node{.kind = NodeKind::kLiterals, .literals = {"true", "false"}});
    return Add(Node{.kind = NodeKind::kLiterals, .literals = {"null"}});
  }

  absl::StatusOr<int32_t> Object(const Json& schema, const std::string& pointer, int depth) {
    bool additional = true;
    const Json* additional_schema = nullptr;  // additionalProperties as a schema (a map's values).
    // Declared properties are evaluated, so with unevaluatedProperties only they are generated.
    const bool only_declared = schema.value("unevaluatedProperties", Json(true)) != Json(true);
    if (only_declared) {
      additional = false;
    } else if (schema.contains("additionalProperties")) {
      const Json& value = schema["additionalProperties"];
      if (value.is_boolean()) {
        additional = value.get<bool>();
      } else {
        additional_schema = &value;
      }
    }
    ASSIGN_OR_RETURN(absl::flat_hash_set<std::string> required, RequiredNames(schema, pointer));
    Node node{.kind = NodeKind::kObject};
    bool forbidden = false;  // A property is false: no map of any keys.
    if (schema.contains("properties")) {
      const Json& properties = schema["properties"];
      const std::string at = ChildPointer(pointer, "properties");
      if (!properties.is_object()) return SchemaError(at, "properties: must be an object");
      for (const auto& [name, property] : properties.items()) {
        // A property whose schema accepts nothing (false, a `not` of everything, through
        // references) must be absent: never generated.
        const Json* target = FollowRefs(property, root_);
        if (target != nullptr && TypesLetThrough(*target).none() && !required.contains(name)) {
          forbidden = true;
          continue;
        }
        ASSIGN_OR_RETURN(const int32_t value, Compile(property, ChildPointer(at, name), depth + 1));
        node.properties.push_back(Property{
            .key = Json(name).dump(), .value = value, .required = required.contains(name)});
        required.erase(name);
      }
    }
    // Required names that are not declared come after the declared ones, with values of
    // additionalProperties' schema (any value when it is true or absent).
    if (!required.empty() && additional) {
      int32_t value = -1;
      for (const Json& name : schema["required"]) {
        if (!required.erase(name.get<std::string>())) continue;  // Declared, or listed twice.
        if (value < 0) {
          ASSIGN_OR_RETURN(value, additional_schema == nullptr
                                      ? AnyValue()
                                      : Compile(*additional_schema,
                                                ChildPointer(pointer, "additionalProperties"),
                                                depth + 1));
        }
        node.properties.push_back(Property{.key = name.dump(), .value = value, .required = true});
      }
    }
    if (!required.empty()) {
      std::vector<std::string> missing(required.begin(), required.end());
      std::sort(missing.begin(), missing.end());
      return SchemaError(ChildPointer(pointer, "required"),
                   absl::StrCat("required: '", absl::StrJoin(missing, "', '"),
                                "' not among the properties, and ",
                                only_declared ? "unevaluatedProperties is not true"
                                              : "additionalProperties is false"));
    }
    // Without declared properties the object is a map: any keys, values of additionalProperties'
    // schema (any value when it is true or absent). With them, only they are generated.
    node.free_form = node.properties.empty() && additional && !forbidden;
    if (node.free_form && additional_schema != nullptr) {
      ASSIGN_OR_RETURN(node.items, Compile(*additional_schema,
                                           ChildPointer(pointer, "additionalProperties"), depth + 1));
    }
    ASSIGN_OR_RETURN(const int32_t index, Add(std::move(node), pointer));
    if (grammar_.nodes[index].free_form) {
      RETURN_IF_ERROR(AnyValue().status());
      RETURN_IF_ERROR(AnyString().status());
    }
    return index;
  }

  absl::StatusOr<int32_t> Array(const Json& schema, const std::string& pointer, int depth) {
    Node node{.kind = NodeKind::kArray};
    for (const char* key : {"minItems", "maxItems"}) {
      if (!schema.contains(key)) continue;
      const Json& value = schema[key];
      const bool minimum = std::string(key) == "minItems";
      // A larger maxItems binds nothing more than the largest count generated; 2.0 is 2.
      const double count = value.is_number() ? value.get<double>() : -1;
      if (count < 0 || std::floor(count) != count || (minimum && count > kMaxItemsBound)) {
        return SchemaError(ChildPointer(pointer, key),
                           absl::StrCat(key, ": must be an integer in [0, ", kMaxItemsBound, "]"));
      }
      (minimum ? node.min_items : node.max_items) =
          static_cast<int32_t>(std::min<double>(count, kMaxItemsBound));
    }
    // Where a false schema leaves no item: arrays end before it.
    auto end_before = [&node](size_t position) {
      const int32_t n = static_cast<int32_t>(position);
      node.max_items = node.max_items < 0 ? n : std::min(node.max_items, n);
    };
    if (schema.contains("prefixItems")) {
      const Json& prefix = schema["prefixItems"];
      const std::string at = ChildPointer(pointer, "prefixItems");
      if (!prefix.is_array() || prefix.empty() || prefix.size() > kMaxItemsBound) {
        return SchemaError(at, "prefixItems: must be a non-empty list of schemas");
      }
      for (size_t i = 0; i < prefix.size() && prefix[i] != Json(false); ++i) {
        ASSIGN_OR_RETURN(const int32_t item,
                         Compile(prefix[i], ChildPointer(at, std::to_string(i)), depth + 1));
        node.prefix.push_back(item);
      }
      if (node.prefix.size() < prefix.size()) end_before(node.prefix.size());
    }
    if (schema.contains("items") && schema["items"].is_array()) {
      return SchemaError(ChildPointer(pointer, "items"),
                         "items: a list (draft 2019 tuples) is not supported; use prefixItems");
    }
    if (schema.contains("items") && schema["items"] == Json(false)) {
      end_before(node.prefix.size());
      ASSIGN_OR_RETURN(node.items, AnyValue());  // Never reached.
    } else if (schema.contains("items")) {
      ASSIGN_OR_RETURN(node.items,
                       Compile(schema["items"], ChildPointer(pointer, "items"), depth + 1));
    } else {
      ASSIGN_OR_RETURN(node.items, AnyValue());
    }
    // Items past prefixItems without items are unevaluated: none with unevaluatedItems.
    if (!schema.contains("items") && schema.value("unevaluatedItems", Json(true)) != Json(true)) {
      end_before(node.prefix.size());
    }
    if (node.max_items >= 0 && node.min_items > node.max_items) {
      return SchemaError(ChildPointer(pointer, "minItems"),
                         "minItems: exceeds maxItems (or the items a false schema allows)");
    }
    return Add(std::move(node), pointer);
  }

  // `enum` (or else `const`): the values of the listed types. Other keywords beside it become the
  // node every value must match too (FilterLiterals), `const` beside `enum` included.
  absl::StatusOr<int32_t> Literals(const Json& schema, const std::string& pointer, int depth) {
    const char* keyword = schema.contains("enum") ? "enum" : "const";
    std::vector<Json> values;
    if (schema.contains("enum")) {
      const Json& list = schema["enum"];
      if (!list.is_array() || list.empty()) {
        return SchemaError(ChildPointer(pointer, "enum"), "enum: must be a non-empty list");
      }
      values.assign(list.begin(), list.end());
    } else {
      values.push_back(schema["const"]);
    }
    std::vector<std::string> types;
    if (schema.contains("type")) {
      ASSIGN_OR_RETURN(types, InstanceTypes(schema, pointer));
    }
    Node node{.kind = NodeKind::kLiterals};
    absl::flat_hash_set<std::string> seen;  // A set, so a long enum stays linear.
    for (const Json& value : values) {
      if (!types.empty() && std::none_of(types.begin(), types.end(),
                                         [&](const std::string& t) { return HasType(value, t); })) {
        return SchemaError(pointer, absl::StrCat(keyword, ": value ", DumpExactJson(value),
                                                 " is not of type ", absl::StrJoin(types, " or ")));
      }
      std::string text = DumpExactJson(value);
      if (seen.insert(text).second) node.literals.push_back(std::move(text));
    }
    Json rest = schema;
    rest.erase(keyword);
    if (std::any_of(rest.items().begin(), rest.items().end(), [](const auto& item) {
          return item.key() != "type" && !IsAnnotation(item.key());
        })) {
      ASSIGN_OR_RETURN(node.filter, Compile(rest, pointer, depth + 1));
    }
    return Add(std::move(node), pointer);
  }

  absl::StatusOr<int32_t> Alternatives(const Json& schema, const std::string& pointer, int depth) {
    const char* keyword = schema.contains("anyOf") ? "anyOf" : "oneOf";
    for (const auto& [key, unused] : schema.items()) {
      if (!IsAnnotation(key) && key != keyword) {
        return SchemaError(pointer, absl::StrCat("keyword '", key, "' beside ", keyword,
                                           " is not supported (move it into each alternative)"));
      }
    }
    const Json& list = schema[keyword];
    const std::string at = ChildPointer(pointer, keyword);
    if (!list.is_array() || list.empty()) {
      return SchemaError(at, absl::StrCat(keyword, ": must be a non-empty list of schemas"));
    }
    // anyOf's false alternatives accept nothing: they are left out.
    OneOfSplit split;
    if (std::string(keyword) == "oneOf") {
      ASSIGN_OR_RETURN(split, SplitOneOf(list, root_, at));
    } else {
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i] != Json(false)) split.alternatives.emplace_back(i, list[i]);
      }
      if (split.alternatives.empty()) return SchemaError(at, "anyOf: every alternative is false");
    }
    Node node{.kind = NodeKind::kUnion};
    for (const auto& [i, alternative] : split.alternatives) {
      ASSIGN_OR_RETURN(const int32_t compiled,
                       Compile(alternative, ChildPointer(at, std::to_string(i)), depth + 1));
      node.alternatives.push_back(compiled);
    }
    // Only tagged objects' alternatives must not overlap: any document of the others is valid.
    unions_.push_back({grammar_.nodes.size(), at, !split.tagged});
    return Add(std::move(node), pointer);
  }

  absl::StatusOr<int32_t> Ref(const Json& schema, const std::string& pointer, int depth) {
    const std::string at = ChildPointer(pointer, "$ref");
    for (const auto& [key, unused] : schema.items()) {
      if (!IsAnnotation(key) && key != "$ref") {
        return SchemaError(pointer, absl::StrCat("keyword '", key, "' beside $ref is not supported"));
      }
    }
    if (!schema["$ref"].is_string()) return SchemaError(at, "$ref: must be a string");
    const std::string ref = schema["$ref"].get<std::string>();
    if (ref.empty() || ref[0] != '#') {
      return SchemaError(at, absl::StrCat("$ref '", ref,
                                    "' is not supported (only references into this schema, "
                                    "'#/$defs/…')"));
    }
    if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
    const Json* target = FindLocalRef(root_, ref);
    if (target == nullptr) {
      return SchemaError(at, absl::StrCat("$ref '", ref, "' names nothing in the schema"));
    }
    // A one-alternative union stands for the reference, so a recursive one can point at it
    // before its target is compiled.
    ASSIGN_OR_RETURN(const int32_t slot, Add(Node{.kind = NodeKind::kUnion}, at));
    refs_.emplace(ref, slot);
    // Errors inside it name where it is: its JSON pointer, or the reference for an anchor.
    const std::string where = ref.size() == 1 || ref[1] == '/' ? ref.substr(1) : at;
    ASSIGN_OR_RETURN(const int32_t compiled, Compile(*target, where, depth + 1));
    grammar_.nodes[slot].alternatives = {compiled};
    unions_.push_back({static_cast<size_t>(slot), at, false});
    return slot;
  }

  // Every union's alternatives must start with different bytes, so the first byte picks one
  // (tagged objects count as one alternative, discriminated_union.h): anyOf keeps the first of
  // alternatives that overlap (generating fewer valid values), oneOf is refused. A reference that
  // leads back to itself before any byte is matched is refused too.
  absl::Status CheckUnions() {
    for (const auto& [index, pointer, any_of] : unions_) {
      std::vector<bool> merged;
      std::optional<Node> tagged =
          MergeTaggedObjects(grammar_, grammar_.nodes[index].alternatives, merged);
      std::vector<int32_t> alternatives;
      std::vector<size_t> positions;  // Of the alternatives left, in the schema's list.
      if (tagged) {
        ASSIGN_OR_RETURN(const int32_t node, Add(*std::move(tagged), pointer));
        alternatives.push_back(node);
        positions.push_back(std::find(merged.begin(), merged.end(), true) - merged.begin());
      }
      for (size_t i = 0; i < merged.size(); ++i) {
        if (merged[i]) continue;
        alternatives.push_back(grammar_.nodes[index].alternatives[i]);
        positions.push_back(i);
      }
      std::vector<int32_t> kept;
      std::bitset<256> seen;
      for (size_t i = 0; i < alternatives.size(); ++i) {
        absl::flat_hash_set<int32_t> visiting = {static_cast<int32_t>(index)};
        std::bitset<256> first;
        if (!FirstOf(grammar_, alternatives[i], visiting, first)) {
          return SchemaError(pointer, "$ref: the reference leads back to itself before any value");
        }
        if ((seen & first).any() && any_of) continue;
        if ((seen & first).any()) {
          return SchemaError(pointer,
                       absl::StrCat("alternative ", positions[i],
                                    " can start like an earlier one; alternatives must be of "
                                    "different JSON types, distinct values, or objects whose "
                                    "first property is required and holds a distinct const "
                                    "string in each"));
        }
        seen |= first;
        kept.push_back(alternatives[i]);
      }
      grammar_.nodes[index].alternatives = std::move(kept);
    }
    return absl::OkStatus();
  }

  // A schema whose every instance is infinite is refused where the cycle that forces it leaves
  // no way out (finite_instances.h).
  absl::Status CheckFinite() const {
    const std::optional<InfiniteEdge> edge = FindInfiniteCycle(grammar_);
    if (!edge) return absl::OkStatus();
    const Node& node = grammar_.nodes[edge->node];
    if (edge->property < 0) {
      return SchemaError(ChildPointer(pointers_[edge->node], "items"),
                   "minItems requires an item whose schema requires this array again, so no "
                   "instance is finite; allow an empty array or give the recursion a way to end");
    }
    const std::string name = Json::parse(node.properties[edge->property].key).get<std::string>();
    return SchemaError(ChildPointer(ChildPointer(pointers_[edge->node], "properties"), name),
                 absl::StrCat("required property '", name,
                              "' has no finite value: its schema requires it again (through "
                              "$ref), so no instance is finite; make a property on the cycle "
                              "optional or give it an alternative that ends"));
  }

  // The matcher's index of each object's keys and each literal list.
  void IndexNames() {
    for (Node& node : grammar_.nodes) {
      if (node.kind == NodeKind::kLiterals) {
        node.names = StringTrie(node.literals);
      } else if (node.kind == NodeKind::kObject || node.kind == NodeKind::kDiscriminated) {
        node.tags = StringTrie(node.literals);
        std::vector<std::string> keys;
        for (const Property& property : node.properties) keys.push_back(property.key);
        node.names = StringTrie(keys);
        const int32_t size = static_cast<int32_t>(node.properties.size());
        node.required_from.assign(size + 1, size);
        for (int32_t i = size - 1; i >= 0; --i) {
          node.required_from[i] = node.properties[i].required ? i : node.required_from[i + 1];
        }
      }
    }
  }

  // Once the unions are known to be acyclic.
  void FillFirstBytes() {
    grammar_.first_bytes.assign(grammar_.nodes.size(), {});
    for (size_t i = 0; i < grammar_.nodes.size(); ++i) {
      absl::flat_hash_set<int32_t> visiting;
      FirstOf(grammar_, static_cast<int32_t>(i), visiting, grammar_.first_bytes[i]);
    }
  }

  // Keeps of each enum or const the values its filter node takes, as the matcher sees them (so
  // a value is generated only in a form the rest of the schema is known to accept), once the
  // graph is whole and indexed.
  absl::Status FilterLiterals() {
    bool changed = false;
    for (size_t i = 0; i < grammar_.nodes.size(); ++i) {
      if (grammar_.nodes[i].kind != NodeKind::kLiterals || grammar_.nodes[i].filter < 0) continue;
      std::vector<std::string> kept;
      for (const std::string& literal : grammar_.nodes[i].literals) {
        JsonMatcher matcher(&grammar_, Frame{.node = grammar_.nodes[i].filter});
        if (matcher.FeedAll(literal) && matcher.AcceptsEnd()) kept.push_back(literal);
      }
      if (kept.empty()) {
        return SchemaError(pointers_[i], "enum: no value satisfies the schema's other keywords");
      }
      changed = changed || kept.size() < grammar_.nodes[i].literals.size();
      grammar_.nodes[i].literals = std::move(kept);
      // At once: a later enum's filter may be this one.
      grammar_.nodes[i].names = StringTrie(grammar_.nodes[i].literals);
    }
    if (changed) FillFirstBytes();
    return absl::OkStatus();
  }

  const Json& root_;
  JsonGrammar grammar_;
  absl::flat_hash_map<std::string, int32_t> refs_;
  struct PendingUnion {
    size_t index;
    std::string pointer;  // Where it is, for errors.
    bool any_of;          // Overlapping alternatives may be dropped (any one is valid).
  };
  std::vector<PendingUnion> unions_;  // Unions to check.
  std::vector<std::string> pointers_;                            // Per node: its schema's place.
};

}  // namespace

absl::StatusOr<JsonGrammar> CompileJsonSchema(absl::string_view schema_text) {
  if (schema_text.size() > kMaxSchemaBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the schema is ", schema_text.size(), " bytes; at most ", kMaxSchemaBytes));
  }
  // The depth is checked while parsing, before anything recursive (compiling, dumping literals)
  // walks the document.
  absl::StatusOr<Json> schema = ParseExactJson(schema_text, kMaxSchemaDepth);
  if (!schema.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the schema is ", schema.status().message()));
  }
  // References by URI become pointers into the document, the one form the compiler follows.
  ASSIGN_OR_RETURN(const Json resolved, ResolveReferences(*schema));
  return Compiler(resolved).Run();
}

JsonGrammar AnyJsonObjectGrammar() {
  static const Json kEmpty = Json::object();
  return Compiler(kEmpty).AnyObject();
}

}  // namespace arbor::grammar
