// A byte trie over a list of strings (an object's property keys, an enum's literals): the index
// that lets the matcher take a key or literal byte in time independent of how many there are,
// so a token mask over the vocabulary is one joint walk of the token trie and this one rather
// than the vocabulary times the list.
#ifndef ARBOR_GRAMMAR_STRING_TRIE_H_
#define ARBOR_GRAMMAR_STRING_TRIE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace arbor::grammar {

class StringTrie {
 public:
  StringTrie() = default;
  // strings[i] has index i; equal strings keep the first index.
  explicit StringTrie(const std::vector<std::string>& strings);

  static constexpr int32_t kRoot = 0;
  // The node after `byte` from `node`, or -1.
  int32_t Child(int32_t node, uint8_t byte) const;
  bool HasChildren(int32_t node) const { return !nodes_[node].children.empty(); }
  // The index of the string that ends at `node`, or -1.
  int32_t Ending(int32_t node) const { return nodes_[node].ending; }
  // The smallest index at least `from` among the strings through `node`, or -1 when none.
  int32_t FirstFrom(int32_t node, int32_t from) const;

 private:
  struct TrieNode {
    std::vector<std::pair<uint8_t, int32_t>> children;  // By byte, ascending.
    int32_t ending = -1;
    std::vector<int32_t> indices;  // Of the strings through this node, ascending.
  };
  std::vector<TrieNode> nodes_ = std::vector<TrieNode>(1);
};

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_STRING_TRIE_H_
