// The byte trie of string_trie.h.
#include "grammar/string_trie.h"

#include <algorithm>

namespace arbor::grammar {

StringTrie::StringTrie(const std::vector<std::string>& strings) {
  for (size_t i = 0; i < strings.size(); ++i) {
    const int32_t index = static_cast<int32_t>(i);
    int32_t node = kRoot;
    nodes_[node].indices.push_back(index);
    for (char c : strings[i]) {
      const uint8_t byte = static_cast<uint8_t>(c);
      int32_t next = Child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto& children = nodes_[node].children;
        children.insert(std::upper_bound(children.begin(), children.end(),
                                         std::make_pair(byte, int32_t{-1})),
                        {byte, next});
        nodes_.emplace_back();  // After the insert: it may move nodes_[node].
      }
      node = next;
      nodes_[node].indices.push_back(index);  // Indices arrive ascending.
    }
    if (nodes_[node].ending < 0) nodes_[node].ending = index;
  }
}

int32_t StringTrie::Child(int32_t node, uint8_t byte) const {
  const auto& children = nodes_[node].children;
  auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1}));
  return it != children.end() && it->first == byte ? it->second : -1;
}

int32_t StringTrie::FirstFrom(int32_t node, int32_t from) const {
  const auto& indices = nodes_[node].indices;
  auto it = std::lower_bound(indices.begin(), indices.end(), from);
  return it == indices.end() ? -1 : *it;
}

}  // namespace arbor::grammar
