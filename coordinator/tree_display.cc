#include "coordinator/tree_display.h"

#include <string_view>

#include "absl/strings/str_format.h"

namespace arbor::coordinator {
namespace {

constexpr std::string_view kStrategyPrefix = "STRATEGY_";
constexpr std::string_view kStatusPrefix = "NODE_STATUS_";

std::string StripPrefix(const std::string& name, std::string_view prefix) {
  return name.compare(0, prefix.size(), prefix) == 0 ? name.substr(prefix.size()) : name;
}

struct Colors {
  const char* hex;
  const char* ansi;
};

Colors ColorsOf(v1::Strategy strategy) {
  switch (strategy) {
    case v1::STRATEGY_ARGMAX:
      return {"#4a4a4a", "0"};  // The confident default: plain.
    case v1::STRATEGY_ADAPTIVE:
      return {"#1f77b4", "34"};  // Blue.
    case v1::STRATEGY_BRANCH:
      return {"#2ca02c", "32"};  // Green.
    case v1::STRATEGY_INSERT:
      return {"#9467bd", "35"};  // Magenta.
    case v1::STRATEGY_BACKSPACE:
      return {"#d62728", "31"};  // Red.
    case v1::STRATEGY_HOT_SAMPLE:
      return {"#ff7f0e", "33"};  // Orange / yellow.
    case v1::STRATEGY_RESAMPLE:
      return {"#8c564b", "91"};  // Brown / bright red.
    case v1::STRATEGY_BRANCH_SAMPLE:
      return {"#17becf", "36"};  // Cyan.
    case v1::STRATEGY_FORCED:
      return {"#7f7f7f", "2"};  // Grey / dim.
    default:
      return {"#000000", "0"};
  }
}

}  // namespace

std::string StrategyName(v1::Strategy strategy) {
  return StripPrefix(v1::Strategy_Name(strategy), kStrategyPrefix);
}

std::string NodeStatusName(v1::NodeStatus status) {
  return StripPrefix(v1::NodeStatus_Name(status), kStatusPrefix);
}

std::optional<v1::Strategy> ParseStrategyName(const std::string& name) {
  v1::Strategy strategy;
  if (!v1::Strategy_Parse(std::string(kStrategyPrefix) + name, &strategy)) return std::nullopt;
  return strategy;
}

std::optional<v1::NodeStatus> ParseNodeStatusName(const std::string& name) {
  v1::NodeStatus status;
  if (!v1::NodeStatus_Parse(std::string(kStatusPrefix) + name, &status)) return std::nullopt;
  return status;
}

std::string StrategyHexColor(v1::Strategy strategy) { return ColorsOf(strategy).hex; }
std::string StrategyAnsiColor(v1::Strategy strategy) { return ColorsOf(strategy).ansi; }

std::string EscapeTokenText(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const unsigned char c = static_cast<unsigned char>(ch);
    // C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F) act as escapes on some terminals.
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(text[i + 1]));
      ++i;
      continue;
    }
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += absl::StrFormat("\\x%02x", c);
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace arbor::coordinator
