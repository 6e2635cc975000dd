#include "views/tree_display.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace arbor::views {
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

struct Range {
  char32_t first, last;
};

// Combining marks, zero-width spaces and joiners, bidi controls, variation selectors, emoji skin
// tone modifiers and tags: drawn on top of the previous character.
constexpr Range kZeroWidth[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489},   {0x0591, 0x05BD},   {0x0610, 0x061A}, {0x064B, 0x065F},
    {0x0670, 0x0670}, {0x06D6, 0x06DC},   {0x1AB0, 0x1AFF},   {0x1DC0, 0x1DFF}, {0x200B, 0x200F},
    {0x202A, 0x202E}, {0x2060, 0x2064},   {0x20D0, 0x20FF},   {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F},
    {0xFEFF, 0xFEFF}, {0x1F3FB, 0x1F3FF}, {0xE0000, 0xE0FFF},
};

// East Asian Wide and Fullwidth (Unicode 15, UAX #11) and emoji with emoji presentation.
constexpr Range kWide[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
    {0x23F0, 0x23F0},   {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},
    {0x2648, 0x2653},   {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},
    {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},
    {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},
    {0x2728, 0x2728},   {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},
    {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},
    {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},
    {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
    {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},
    {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4},
    {0x17000, 0x18AFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF},
    {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F202}, {0x1F210, 0x1F23B},
    {0x1F240, 0x1F248}, {0x1F250, 0x1F251}, {0x1F260, 0x1F265}, {0x1F300, 0x1F64F},
    {0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF},
    {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

template <size_t N>
bool In(const Range (&ranges)[N], char32_t c) {
  const Range* it = std::upper_bound(std::begin(ranges), std::end(ranges), c,
                                     [](char32_t v, const Range& r) { return v < r.first; });
  return it != std::begin(ranges) && c <= std::prev(it)->last;
}

int CodePointWidth(char32_t c) {
  if (In(kZeroWidth, c)) return 0;
  return In(kWide, c) ? 2 : 1;
}

// The code point that starts at `text[i]` and its length in bytes; an invalid or truncated
// sequence is one byte long (U+FFFD, one column).
char32_t DecodeAt(std::string_view text, size_t i, size_t* length) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t n = lead < 0x80           ? 1
             : (lead >> 5) == 0x6  ? 2
             : (lead >> 4) == 0xE  ? 3
             : (lead >> 3) == 0x1E ? 4
                                   : 0;
  char32_t c = n == 1 ? lead : n == 2 ? lead & 0x1F : n == 3 ? lead & 0x0F : lead & 0x07;
  bool valid = n > 0 && i + n <= text.size();
  for (size_t k = 1; valid && k < n; ++k) {
    valid = (byte(i + k) & 0xC0) == 0x80;
    c = (c << 6) | (byte(i + k) & 0x3F);
  }
  *length = valid ? n : 1;
  return valid ? c : 0xFFFD;
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

std::string FlowTokenText(const std::string& text) {
  std::string out;
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    out += EscapeTokenText(text.substr(start, nl - start)) + "\n";
    start = nl + 1;
  }
  return out + EscapeTokenText(text.substr(start));
}

int DisplayWidth(std::string_view text) {
  int width = 0;
  size_t length = 0;
  for (size_t i = 0; i < text.size(); i += length)
    width += CodePointWidth(DecodeAt(text, i, &length));
  return width;
}

std::string TruncateToWidth(std::string_view text, int width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  size_t end = 0;
  int used = 0;
  size_t length = 0;
  for (size_t i = 0; i < text.size(); i += length) {
    const int w = CodePointWidth(DecodeAt(text, i, &length));
    if (used + w + 1 > width) break;  // The ellipsis takes the last column.
    used += w;
    end = i + length;
  }
  return width < 1 ? "" : std::string(text.substr(0, end)) + "…";
}

std::string TokenCell(const std::string& text, int width) {
  std::string cell = absl::StrCat("\"", TruncateToWidth(EscapeTokenText(text), width - 2), "\"");
  cell.append(std::max(0, width - DisplayWidth(cell)), ' ');
  return cell;
}

std::string NodeText(const v1::TreeNode& node) { return node.stop_token() ? "⟨end⟩" : node.text(); }

}  // namespace arbor::views
