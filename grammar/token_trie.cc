#include "grammar/token_trie.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace arbor::grammar {

TokenTrie::TokenTrie(std::vector<std::string> token_bytes) : token_bytes_(std::move(token_bytes)) {
  std::vector<int32_t> sorted;
  for (int32_t id = 0; id < vocab_size(); ++id) {
    if (!token_bytes_[id].empty()) sorted.push_back(id);
  }
  // Byte order, unsigned: a prefix sorts before what extends it, so nodes are made in pre-order.
  std::stable_sort(sorted.begin(), sorted.end(), [this](int32_t x, int32_t y) {
    return std::lexicographical_compare(
        token_bytes_[x].begin(), token_bytes_[x].end(), token_bytes_[y].begin(),
        token_bytes_[y].end(),
        [](char a, char b) { return static_cast<uint8_t>(a) < static_cast<uint8_t>(b); });
  });
  auto add_node = [this](int32_t parent, uint8_t byte) {
    byte_.push_back(byte);
    parent_.push_back(parent);
    next_sibling_.push_back(-1);
    tokens_begin_.push_back(static_cast<int32_t>(order_.size()));
    tokens_ending_.push_back(0);
    tokens_end_.push_back(0);
    return static_cast<int32_t>(byte_.size() - 1);
  };
  add_node(-1, 0);
  std::vector<int32_t> path = {kRoot};     // Nodes along the previous token's bytes.
  std::vector<int32_t> last_child = {-1};  // Per path entry: its latest child, for siblings.
  const std::string* previous = nullptr;
  for (int32_t id : sorted) {
    const std::string& text = token_bytes_[id];
    size_t common = 0;
    if (previous != nullptr) {
      while (common < previous->size() && common < text.size() &&
             (*previous)[common] == text[common]) {
        ++common;
      }
    }
    while (path.size() > common + 1) {  // Leave the nodes this token does not share.
      tokens_end_[path.back()] = static_cast<int32_t>(order_.size());
      path.pop_back();
      last_child.pop_back();
    }
    for (size_t i = common; i < text.size(); ++i) {
      const int32_t node = add_node(path.back(), static_cast<uint8_t>(text[i]));
      if (last_child.back() >= 0) next_sibling_[last_child.back()] = node;
      last_child.back() = node;
      path.push_back(node);
      last_child.push_back(-1);
    }
    order_.push_back(id);
    ++tokens_ending_[path.back()];
    previous = &text;
  }
  for (int32_t node : path) tokens_end_[node] = static_cast<int32_t>(order_.size());
}

int32_t TokenTrie::first_child(int32_t node) const {
  const int32_t next = node + 1;  // Pre-order: a first child directly follows its parent.
  return next < num_nodes() && parent_[next] == node ? next : -1;
}

absl::Span<const int32_t> TokenTrie::TokensEndingAt(int32_t node) const {
  return absl::MakeConstSpan(order_).subspan(tokens_begin_[node], tokens_ending_[node]);
}

absl::Span<const int32_t> TokenTrie::TokensUnder(int32_t node) const {
  return absl::MakeConstSpan(order_).subspan(tokens_begin_[node],
                                             tokens_end_[node] - tokens_begin_[node]);
}

}  // namespace arbor::grammar
