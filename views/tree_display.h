// Names, colours and printable text shared by the tree renderings (JSON, DOT, terminal text) and
// the CLI's event stream, so every view names a strategy or a status the same way, colours it the
// same way, escapes a token the same way and lines up tables by what a terminal actually shows.
#ifndef ARBOR_VIEWS_TREE_DISPLAY_H_
#define ARBOR_VIEWS_TREE_DISPLAY_H_

#include <optional>
#include <string>
#include <string_view>

#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::views {

// The enum value name without its prefix: "ARGMAX", "COMMITTED". Stable: the JSON schema uses
// them (docs/TREE_FORMAT.md).
std::string StrategyName(v1::Strategy strategy);
std::string NodeStatusName(v1::NodeStatus status);
// Inverses of the above; nullopt for an unknown name.
std::optional<v1::Strategy> ParseStrategyName(const std::string& name);
std::optional<v1::NodeStatus> ParseNodeStatusName(const std::string& name);

// Colour of a strategy: "#rrggbb" for Graphviz, an SGR code ("1;34") for terminals. The two
// palettes pick the same hue per strategy.
std::string StrategyHexColor(v1::Strategy strategy);
std::string StrategyAnsiColor(v1::Strategy strategy);

// `text` made safe to print on one line: backslash, newline, tab, carriage return and other
// control characters become C-style escapes ("\n", "\x1b"), so a token cannot move the cursor,
// recolour a terminal or break a label. Printable UTF-8 passes through.
std::string EscapeTokenText(const std::string& text);
// A token inside flowing text (the committed path, the generated stream): its newlines stay line
// breaks, since they are the content; every other character is escaped as by EscapeTokenText.
std::string FlowTokenText(const std::string& text);

// A node's token as the views show it: "⟨end⟩" for the token that ended its sequence (its
// piece, e.g. "<|im_end|>", is not text of the answer), else its piece.
std::string NodeText(const v1::TreeNode& node);

// Terminal columns that UTF-8 `text` takes: per code point 0 for combining marks and other
// zero-width characters, 2 for East Asian wide and fullwidth characters and emoji, 1 otherwise
// (an invalid byte counts as one replacement character). Byte or code point counts misalign
// tables as soon as a token is CJK or an emoji.
int DisplayWidth(std::string_view text);
// `text` cut at a code point so that, with a trailing "…", it fits in `width` columns; unchanged
// when it fits already.
std::string TruncateToWidth(std::string_view text, int width);
// A table cell: the token escaped and in double quotes, truncated (inside the quotes) to `width`
// columns and padded with spaces to exactly `width` columns.
std::string TokenCell(const std::string& text, int width);

}  // namespace arbor::views

#endif  // ARBOR_VIEWS_TREE_DISPLAY_H_
