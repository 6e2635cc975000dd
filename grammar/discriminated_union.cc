// The merge of tagged objects of discriminated_union.h.
#include "grammar/discriminated_union.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace arbor::grammar {
namespace {

// The node a reference (a one-alternative union) stands for.
int32_t Resolve(const JsonGrammar& grammar, int32_t index) {
  absl::flat_hash_set<int32_t> seen;
  while (grammar.nodes[index].kind == NodeKind::kUnion &&
         grammar.nodes[index].alternatives.size() == 1 && seen.insert(index).second) {
    index = grammar.nodes[index].alternatives[0];
  }
  return index;
}

// The key and the tag value (both JSON text) of an object whose first property is required and
// holds one string.
std::optional<std::pair<std::string, std::string>> Tag(const JsonGrammar& grammar,
                                                       int32_t index) {
  const Node& node = grammar.nodes[index];
  if (node.kind != NodeKind::kObject || node.free_form || node.properties.empty() ||
      !node.properties[0].required) {
    return std::nullopt;
  }
  const Node& value = grammar.nodes[Resolve(grammar, node.properties[0].value)];
  if (value.kind != NodeKind::kLiterals || value.literals.size() != 1 ||
      value.literals[0][0] != '"') {
    return std::nullopt;
  }
  return std::make_pair(node.properties[0].key, value.literals[0]);
}

}  // namespace

std::optional<Node> MergeTaggedObjects(const JsonGrammar& grammar,
                                       absl::Span<const int32_t> alternatives,
                                       std::vector<bool>& merged) {
  merged.assign(alternatives.size(), false);
  Node node{.kind = NodeKind::kDiscriminated};
  absl::flat_hash_set<std::string> values;
  for (size_t i = 0; i < alternatives.size(); ++i) {
    const int32_t object = Resolve(grammar, alternatives[i]);
    std::optional<std::pair<std::string, std::string>> tag = Tag(grammar, object);
    if (!tag) continue;
    if (!node.properties.empty() && node.properties[0].key != tag->first) continue;
    // A repeated value would leave two alternatives after the tag: the union's check refuses it.
    if (!values.insert(tag->second).second) continue;
    if (node.properties.empty()) {
      node.properties.push_back(Property{.key = tag->first, .required = true});
    }
    node.literals.push_back(std::move(tag->second));
    node.alternatives.push_back(object);
    merged[i] = true;
  }
  if (node.alternatives.size() < 2) {
    merged.assign(alternatives.size(), false);
    return std::nullopt;
  }
  return node;
}

}  // namespace arbor::grammar
