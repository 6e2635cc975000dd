// Names, colours and printable text shared by the tree renderings (JSON, DOT, terminal text),
// so every view names a strategy or a status the same way and colours it the same way.
#ifndef ARBOR_COORDINATOR_TREE_DISPLAY_H_
#define ARBOR_COORDINATOR_TREE_DISPLAY_H_

#include <optional>
#include <string>

#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator {

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

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_TREE_DISPLAY_H_
