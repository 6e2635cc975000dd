// The finite-instance check of finite_instances.h.
#include "grammar/finite_instances.h"

#include <vector>

#include "absl/container/flat_hash_set.h"

namespace arbor::grammar {
namespace {

// The nodes `node` needs: every listed one (objects, arrays) or any one of them (unions).
std::vector<int32_t> Needs(const Node& node) {
  std::vector<int32_t> needs;
  switch (node.kind) {
    case NodeKind::kObject:
      if (node.free_form) break;  // `{}` is an instance.
      for (const Property& property : node.properties) {
        if (property.required) needs.push_back(property.value);
      }
      break;
    case NodeKind::kArray:
      // The first minItems positions: their prefixItems nodes, then items once.
      for (int32_t i = 0; i < node.min_items && i < static_cast<int32_t>(node.prefix.size()); ++i) {
        needs.push_back(node.prefix[i]);
      }
      if (node.min_items > static_cast<int32_t>(node.prefix.size())) needs.push_back(node.items);
      break;
    case NodeKind::kUnion:
    case NodeKind::kDiscriminated:
      needs = node.alternatives;
      break;
    default:
      break;
  }
  return needs;
}

// Which nodes have a finite instance: least fixpoint, by counting down each node's needs.
std::vector<bool> FiniteNodes(const JsonGrammar& grammar) {
  const size_t size = grammar.nodes.size();
  std::vector<bool> finite(size, false);
  std::vector<int32_t> pending(size, 0);
  std::vector<std::vector<int32_t>> dependents(size);
  std::vector<int32_t> ready;
  for (size_t i = 0; i < size; ++i) {
    const std::vector<int32_t> needs = Needs(grammar.nodes[i]);
    for (int32_t need : needs) dependents[need].push_back(static_cast<int32_t>(i));
    const bool any_one = grammar.nodes[i].kind == NodeKind::kUnion ||
                         grammar.nodes[i].kind == NodeKind::kDiscriminated;
    pending[i] = any_one ? 1 : static_cast<int32_t>(needs.size());
    if (pending[i] == 0) ready.push_back(static_cast<int32_t>(i));
  }
  while (!ready.empty()) {
    const int32_t node = ready.back();
    ready.pop_back();
    finite[node] = true;
    for (int32_t dependent : dependents[node]) {
      if (pending[dependent] > 0 && --pending[dependent] == 0) ready.push_back(dependent);
    }
  }
  return finite;
}

}  // namespace

std::optional<InfiniteEdge> FindInfiniteCycle(const JsonGrammar& grammar) {
  const std::vector<bool> finite = FiniteNodes(grammar);
  if (finite[grammar.root]) return std::nullopt;
  // Every instance of an infinite node needs an infinite node: follow such needs until one comes
  // round again. Unions cannot close a cycle alone (their first bytes are checked, and a
  // discriminated one leads to objects), so the last
  // object or array edge taken lies on the cycle.
  absl::flat_hash_set<int32_t> seen;
  InfiniteEdge last;
  for (int32_t node = grammar.root; seen.insert(node).second;) {
    const Node& n = grammar.nodes[node];
    if (n.kind == NodeKind::kUnion || n.kind == NodeKind::kDiscriminated) {
      node = n.alternatives[0];
    } else if (n.kind == NodeKind::kArray) {
      last = InfiniteEdge{.node = node, .property = -1};
      for (int32_t need : Needs(n)) {
        if (!finite[need]) {
          node = need;
          break;
        }
      }
    } else {
      for (size_t i = 0; i < n.properties.size(); ++i) {
        if (n.properties[i].required && !finite[n.properties[i].value]) {
          last = InfiniteEdge{.node = node, .property = static_cast<int32_t>(i)};
          node = n.properties[i].value;
          break;
        }
      }
    }
  }
  return last;
}

}  // namespace arbor::grammar
