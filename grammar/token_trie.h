// The model's vocabulary as a byte trie, so that a grammar state is tested against every token by
// one walk in which tokens sharing a prefix share its bytes' work (and a rejected prefix prunes
// every token under it). Nodes are numbered in pre-order, and tokens are listed in the order the
// walk meets them, so the tokens under a node are one contiguous range.
#ifndef ARBOR_GRAMMAR_TOKEN_TRIE_H_
#define ARBOR_GRAMMAR_TOKEN_TRIE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace arbor::grammar {

class TokenTrie {
 public:
  // token_bytes[id] is what token `id` adds to the text; an empty entry is a token no grammar
  // allows by its bytes (special tokens: the end tokens are handled apart).
  explicit TokenTrie(std::vector<std::string> token_bytes);

  static constexpr int32_t kRoot = 0;
  int32_t num_nodes() const { return static_cast<int32_t>(byte_.size()); }
  int32_t vocab_size() const { return static_cast<int32_t>(token_bytes_.size()); }
  // The children of `node`: first_child(node), then next_sibling(...) until -1.
  int32_t first_child(int32_t node) const;
  int32_t next_sibling(int32_t node) const { return next_sibling_[node]; }
  uint8_t byte(int32_t node) const { return byte_[node]; }
  // Tokens whose bytes end at `node`, then those below it.
  absl::Span<const int32_t> TokensEndingAt(int32_t node) const;
  absl::Span<const int32_t> TokensUnder(int32_t node) const;
  const std::string& bytes(int32_t token) const { return token_bytes_[token]; }

 private:
  std::vector<std::string> token_bytes_;
  std::vector<uint8_t> byte_;  // The edge into each node (the root's is unused).
  std::vector<int32_t> parent_;
  std::vector<int32_t> next_sibling_;
  std::vector<int32_t> tokens_begin_;   // Into order_: this node's first token.
  std::vector<int32_t> tokens_ending_;  // How many of them end at the node.
  std::vector<int32_t> tokens_end_;     // One past the subtree's last token.
  std::vector<int32_t> order_;          // Token ids in pre-order.
};

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_TOKEN_TRIE_H_
