#include "coordinator/tree/tree_export.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace arbor::coordinator {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len;
  uint32_t min;
  uint32_t cp;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, min = 0x80, cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, min = 0x800, cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, min = 0x10000, cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::string TextOf(const TokenTextFn& token_text, int32_t token_id) {
  return token_text ? SanitizeUtf8(token_text(token_id)) : std::string();
}

}  // namespace

std::string SanitizeUtf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(text, i, len);
      i += len;
    }
  }
  return out;
}

absl::StatusOr<v1::Tree> ExportTree(const SearchTree& tree, const TreeExportOptions& options,
                                    const TokenTextFn& token_text) {
  if (!tree.Contains(options.root)) {
    return absl::InvalidArgumentError(
        absl::StrCat("root: no node ", options.root, " in a tree of ", tree.size(), " nodes"));
  }
  if (options.max_depth < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_depth must be >= 0 (0 = unlimited), got ", options.max_depth));
  }
  v1::Tree out;
  out.set_job_id(options.job_id);
  out.set_root(options.root);
  for (int32_t id : tree.prompt_token_ids()) out.add_prompt_token_ids(id);

  // Iterative pre-order: a committed path of tens of thousands of nodes must not recurse.
  struct Pending {
    NodeId id;
    int32_t depth;
  };
  std::vector<Pending> stack = {{options.root, 0}};
  while (!stack.empty()) {
    const Pending p = stack.back();
    stack.pop_back();
    const Node& n = tree.node(p.id);
    v1::TreeNode* t = out.add_nodes();
    t->set_id(n.id);
    t->set_parent(n.parent);
    const std::vector<NodeId> children = tree.Children(n.id);
    for (NodeId c : children) t->add_children(c);
    t->set_token_id(n.token_id);
    if (n.id != kPromptNode) t->set_text(TextOf(token_text, n.token_id));
    t->set_position(n.position);
    t->set_logprob(n.logprob);
    *t->mutable_metrics() = n.metrics;
    t->set_strategy(n.strategy);
    t->set_allowed_tokens(n.allowed_tokens);
    t->set_status(n.status);
    if (n.has_branch_score) t->set_branch_score(n.branch_score);
    t->set_branch_note(std::string(tree.branch_note(n.id)));
    if (options.is_stop_token && n.id != kPromptNode) {
      t->set_stop_token(options.is_stop_token(n.token_id));
    }
    const absl::Span<const TokenAlternative> alternatives = tree.TopLogprobs(n.id);
    const size_t shown = std::min<size_t>(alternatives.size(), std::max(0, options.top_logprobs));
    for (const TokenAlternative& alt : alternatives.first(shown)) {
      v1::TokenLogprob* l = t->add_top_logprobs();
      l->set_token_id(alt.token_id);
      l->set_logprob(alt.logprob);
      l->set_text(TextOf(token_text, alt.token_id));
    }
    t->set_sequence_id(n.sequence_id);
    t->set_branch_depth(n.branch_depth);
    if (options.max_depth == 0 || p.depth < options.max_depth) {
      for (auto it = children.rbegin(); it != children.rend(); ++it) {
        stack.push_back({*it, p.depth + 1});
      }
    }
  }
  return out;
}

}  // namespace arbor::coordinator
