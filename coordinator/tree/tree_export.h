// Exports a job's search tree as the public arbor::v1::Tree message, exactly as GetTree returns
// it: the whole tree or the subtree below a node, optionally depth-limited, with or without the
// top log-probabilities. JSON, DOT and the terminal view (tree_json.h, tree_dot.h, tree_text.h)
// all render that message, so a client holding only a GetTree reply renders what the server does.
#ifndef ARBOR_COORDINATOR_TREE_TREE_EXPORT_H_
#define ARBOR_COORDINATOR_TREE_TREE_EXPORT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {

// Decodes one token id to its text piece. The tree holds ids only, so it needs no tokenizer.
// The piece may be a partial UTF-8 sequence (byte-level BPE); the export makes it valid.
using TokenTextFn = std::function<std::string(int32_t token_id)>;

struct TreeExportOptions {
  std::string job_id;         // Copied into Tree.job_id.
  NodeId root = kPromptNode;  // Subtree root; the prompt node exports the whole tree.
  int32_t max_depth = 0;      // Levels below root, >= 0; 0 = unlimited.
  // Alternatives per node, best first, at most this many; 0 = none. The tree keeps every
  // alternative the worker returned (BACKSPACE re-draws from them); a job's export shows the
  // top_logprobs it asked for.
  int32_t top_logprobs = 0;
  // Whether a token ends the job's sequences (its eos and stop ids), for TreeNode.stop_token;
  // unset: none is marked.
  std::function<bool(int32_t token_id)> is_stop_token;
};

// Nodes come in pre-order from the root (children in creation order). A node's `children`
// always lists every child, so a client can ask for the subtree of one cut by max_depth.
// `token_text` may be empty (no text). INVALID_ARGUMENT for an unknown root or negative depth.
absl::StatusOr<v1::Tree> ExportTree(const SearchTree& tree, const TreeExportOptions& options,
                                    const TokenTextFn& token_text);

// `text` with every invalid UTF-8 byte replaced by U+FFFD, so it is a valid proto3 string and
// JSON string.
std::string SanitizeUtf8(const std::string& text);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_TREE_TREE_EXPORT_H_
