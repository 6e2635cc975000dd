// The pattern parser of regex_parser.h: recursive descent over the pattern's code points.
#include "grammar/regex_parser.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/string_automaton.h"

namespace arbor::grammar {
namespace {

using Kind = RegexNode::Kind;

// A character class item as the two engines see it: `lower` what both match (what is
// generated), `upper` what either matches (what a negation must leave out).
struct Sets {
  CodePointSet lower;
  CodePointSet upper;
  Sets Negated() const { return {upper.Complement(), lower.Complement()}; }
};

Sets Exactly(CodePointSet set) { return {set, set}; }

// \d, \w, \s by their letter (lower case). ECMA-262 for \d and \w, Python's `re` beyond ASCII.
Sets ClassEscape(uint32_t letter) {
  const CodePointSet non_ascii({{0x80, kMaxCodePoint}});
  if (letter == 'd') {
    const CodePointSet digits({{'0', '9'}});
    return {digits, digits.Union(non_ascii)};
  }
  if (letter == 'w') {
    const CodePointSet word({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
    return {word, word.Union(non_ascii)};
  }
  const CodePointSet both({{0x09, 0x0D},
                           {0x20, 0x20},
                           {0xA0, 0xA0},
                           {0x1680, 0x1680},
                           {0x2000, 0x200A},
                           {0x2028, 0x2029},
                           {0x202F, 0x202F},
                           {0x205F, 0x205F},
                           {0x3000, 0x3000}});
  // U+FEFF is ECMA-262's only; 0x1C-0x1F and U+0085 Python's only.
  return {both, both.Union(CodePointSet({{0x1C, 0x1F}, {0x85, 0x85}, {0xFEFF, 0xFEFF}}))};
}

// `text` as code points; false when it is not UTF-8.
bool DecodeUtf8(absl::string_view text, std::vector<uint32_t>& out) {
  for (size_t i = 0; i < text.size();) {
    const uint8_t lead = static_cast<uint8_t>(text[i]);
    const int extra = lead < 0x80 ? 0 : lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC2 ? 1 : -1;
    if (extra < 0 || lead > 0xF4 || text.size() - i <= static_cast<size_t>(extra)) return false;
    uint32_t cp = extra == 0 ? lead : lead & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      const uint8_t next = static_cast<uint8_t>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (next & 0x3F);
    }
    const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[extra] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    out.push_back(cp);
    i += extra + 1;
  }
  return true;
}

bool IsDigit(uint32_t c) { return c >= '0' && c <= '9'; }
int HexValue(uint32_t c) {
  if (IsDigit(c)) return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

class Parser {
 public:
  explicit Parser(std::vector<uint32_t> text) : text_(std::move(text)) {}

  absl::StatusOr<RegexNode> Parse() {
    absl::StatusOr<RegexNode> tree = Alternation(0);
    if (tree.ok() && pos_ < text_.size()) return Error("')' without a '(' before it");
    return tree;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  uint32_t Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0xFFFFFFFF;
  }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(what, " (at code point ", pos_, ")"));
  }
  absl::Status Unsupported(absl::string_view what) const {
    return Error(absl::StrCat(what, " is not supported"));
  }

  absl::StatusOr<RegexNode> Alternation(int depth) {
    if (depth > kMaxRegexNesting) {
      return Unsupported(absl::StrCat("nesting groups more than ", kMaxRegexNesting, " deep"));
    }
    RegexNode alternation{.kind = Kind::kAlternation};
    while (true) {
      absl::StatusOr<RegexNode> branch = Concat(depth);
      if (!branch.ok()) return branch.status();
      alternation.children.push_back(*std::move(branch));
      if (Peek() != '|') break;
      ++pos_;
    }
    if (alternation.children.size() == 1) return std::move(alternation.children[0]);
    return alternation;
  }

  absl::StatusOr<RegexNode> Concat(int depth) {
    RegexNode concat{.kind = Kind::kConcat};
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      absl::StatusOr<RegexNode> term = Term(depth);
      if (!term.ok()) return term.status();
      concat.children.push_back(*std::move(term));
    }
    return concat;
  }

  // An atom with its quantifier, if any.
  absl::StatusOr<RegexNode> Term(int depth) {
    const uint32_t c = Peek();
    if (c == '^' || c == '$') {
      ++pos_;
      if (IsQuantifier()) return Error("a quantifier after an anchor: nothing to repeat");
      return RegexNode{.kind = c == '^' ? Kind::kBegin : Kind::kEnd};
    }
    absl::StatusOr<RegexNode> atom = Atom(depth);
    if (!atom.ok() || !IsQuantifier()) return atom;
    RegexNode repeat{.kind = Kind::kRepeat};
    if (absl::Status s = Quantifier(repeat); !s.ok()) return s;
    repeat.children.push_back(*std::move(atom));
    if (Peek() == '?') ++pos_;  // Lazy: the same strings match.
    if (IsQuantifier()) return Error("a quantifier after a quantifier: nothing to repeat");
    return repeat;
  }

  // Whether a quantifier starts here (a '{' only when one of {n}, {n,}, {n,m} follows).
  bool IsQuantifier() const {
    const uint32_t c = Peek();
    if (c == '*' || c == '+' || c == '?') return true;
    if (c != '{' || !IsDigit(Peek(1))) return false;
    size_t i = 1;
    while (IsDigit(Peek(i))) ++i;
    if (Peek(i) == ',') {
      ++i;
      while (IsDigit(Peek(i))) ++i;
    }
    return Peek(i) == '}';
  }

  absl::StatusOr<int> Count() {
    int64_t value = 0;
    while (IsDigit(Peek())) {
      value = std::min<int64_t>(value * 10 + (Peek() - '0'), int64_t{kMaxRepeat} + 1);
      ++pos_;
    }
    if (value > kMaxRepeat) return Unsupported(absl::StrCat("a repeat count above ", kMaxRepeat));
    return static_cast<int>(value);
  }

  absl::Status Quantifier(RegexNode& repeat) {
    const uint32_t c = text_[pos_++];
    if (c != '{') {
      repeat.min = c == '+' ? 1 : 0;
      repeat.max = c == '?' ? 1 : -1;
      return absl::OkStatus();
    }
    absl::StatusOr<int> min = Count();
    if (!min.ok()) return min.status();
    repeat.min = repeat.max = *min;
    if (Peek() == ',') {
      ++pos_;
      repeat.max = -1;
      if (IsDigit(Peek())) {
        absl::StatusOr<int> max = Count();
        if (!max.ok()) return max.status();
        if (*max < *min) return Error("a repeat {n,m} with m below n");
        repeat.max = *max;
      }
    }
    ++pos_;  // '}'
    return absl::OkStatus();
  }

  absl::StatusOr<RegexNode> Atom(int depth) {
    const uint32_t c = text_[pos_];
    if (c == '(') return Group(depth);
    if (c == '*' || c == '+' || c == '?' || (c == '{' && IsQuantifier())) {
      return Error("a quantifier with nothing to repeat");
    }
    if (c == '{')
      return Error("a '{' that starts no {n}, {n,} or {n,m}: write \\{ for the character");
    absl::StatusOr<Sets> sets;
    if (c == '[') {
      sets = Class();
    } else if (c == '\\') {
      sets = Escape(false);
    } else {
      ++pos_;
      const CodePointSet line_ends({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});
      sets = Exactly(c == '.' ? line_ends.Complement() : CodePointSet::Of(c));
    }
    if (!sets.ok()) return sets.status();
    return RegexNode{.kind = Kind::kSet, .set = sets->lower};
  }

  absl::StatusOr<RegexNode> Group(int depth) {
    ++pos_;  // '('
    if (Peek() == '?') {
      const uint32_t kind = Peek(1);
      if (kind == ':') {
        pos_ += 2;
      } else if (kind == '=' || kind == '!' ||
                 (kind == '<' && (Peek(2) == '=' || Peek(2) == '!'))) {
        return Unsupported("lookaround ((?=, (?!, (?<=, (?<!)");
      } else if (kind == '<') {
        pos_ += 2;
        while (!AtEnd() && Peek() != '>') ++pos_;
        if (AtEnd()) return Error("a group name (?<name> without its '>'");
        ++pos_;
      } else {
        return Unsupported("a group (? other than (?: and (?<name> (inline flags, …)");
      }
    }
    absl::StatusOr<RegexNode> inside = Alternation(depth + 1);
    if (!inside.ok()) return inside.status();
    if (Peek() != ')') return Error("a '(' without its ')'");
    ++pos_;
    return inside;
  }

  // After '[': the class up to its ']'.
  absl::StatusOr<Sets> Class() {
    ++pos_;
    const bool negated = Peek() == '^';
    if (negated) ++pos_;
    Sets sets;
    while (Peek() != ']') {
      if (AtEnd()) return Error("a '[' without its ']'");
      absl::StatusOr<std::pair<Sets, bool>> first = ClassAtom();  // bool: a single character.
      if (!first.ok()) return first.status();
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != 0xFFFFFFFF) {
        ++pos_;
        absl::StatusOr<std::pair<Sets, bool>> last = ClassAtom();
        if (!last.ok()) return last.status();
        if (!first->second || !last->second) {
          return Unsupported("a range with a class escape (\\d, \\w, \\s …) at an end");
        }
        const uint32_t lo = first->first.lower.ranges()[0].first;
        const uint32_t hi = last->first.lower.ranges()[0].first;
        if (lo > hi) return Error("a class range out of order");
        first->first = Exactly(CodePointSet({{lo, hi}}));
      }
      sets.lower = sets.lower.Union(first->first.lower);
      sets.upper = sets.upper.Union(first->first.upper);
    }
    ++pos_;
    return negated ? sets.Negated() : sets;
  }

  absl::StatusOr<std::pair<Sets, bool>> ClassAtom() {
    if (Peek() != '\\') return std::pair(Exactly(CodePointSet::Of(text_[pos_++])), true);
    const uint32_t letter = Peek(1) | 0x20;
    const bool escape_class = letter == 'd' || letter == 'w' || letter == 's';
    absl::StatusOr<Sets> sets = Escape(true);
    if (!sets.ok()) return sets.status();
    return std::pair(*std::move(sets), !escape_class);
  }

  // After '\\' (at it): the escape's characters; in a class \b is backspace.
  absl::StatusOr<Sets> Escape(bool in_class) {
    ++pos_;
    if (AtEnd()) return Error("a '\\' at the pattern's end");
    const uint32_t c = text_[pos_++];
    switch (c) {
      case 'd':
      case 'w':
      case 's':
        return ClassEscape(c);
      case 'D':
      case 'W':
      case 'S':
        return ClassEscape(c | 0x20).Negated();
      case 'n':
        return Exactly(CodePointSet::Of('\n'));
      case 'r':
        return Exactly(CodePointSet::Of('\r'));
      case 't':
        return Exactly(CodePointSet::Of('\t'));
      case 'v':
        return Exactly(CodePointSet::Of('\v'));
      case 'f':
        return Exactly(CodePointSet::Of('\f'));
      case 'b':
        if (in_class) return Exactly(CodePointSet::Of('\b'));
        return Unsupported("a word boundary \\b");
      case 'B':
        return Unsupported("a word boundary \\B");
      case 'p':
      case 'P':
        return Unsupported("a Unicode property \\p{…} or \\P{…}");
      case 'k':
        return Unsupported("a backreference \\k<name>");
      case 'c': {
        const uint32_t letter = Peek() | 0x20;
        if (letter < 'a' || letter > 'z') return Error("\\c without a letter after it");
        return Exactly(CodePointSet::Of(text_[pos_++] % 32));
      }
      case 'x':
        return Hex(2);
      case 'u':
        return Peek() == '{' ? Braced() : Utf16();
      case '0':
        if (IsDigit(Peek())) return Unsupported("an octal escape or backreference \\0n");
        return Exactly(CodePointSet::Of(0));
      default:
        break;
    }
    if (IsDigit(c)) return Unsupported("a backreference \\1 … \\9");
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
      return Error(absl::StrFormat("an unknown escape \\%c", static_cast<char>(c)));
    }
    return Exactly(CodePointSet::Of(c));  // Punctuation (\. \/ \- …) or any other character.
  }

  // `digits` hex digits after \x or \u.
  absl::StatusOr<uint32_t> HexDigits(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int v = HexValue(Peek());
      if (v < 0) return Error("an escape with too few hex digits");
      value = value * 16 + v;
      ++pos_;
    }
    return value;
  }

  absl::StatusOr<Sets> Hex(int digits) {
    absl::StatusOr<uint32_t> value = HexDigits(digits);
    if (!value.ok()) return value.status();
    return Exactly(CodePointSet::Of(*value));
  }

  // \uXXXX, joined with a following \uXXXX low surrogate when it is a high one.
  absl::StatusOr<Sets> Utf16() {
    absl::StatusOr<uint32_t> unit = HexDigits(4);
    if (!unit.ok()) return unit.status();
    if (*unit >= 0xD800 && *unit <= 0xDBFF && Peek() == '\\' && Peek(1) == 'u') {
      const size_t at = pos_;
      pos_ += 2;
      absl::StatusOr<uint32_t> low = HexDigits(4);
      if (low.ok() && *low >= 0xDC00 && *low <= 0xDFFF) {
        return Exactly(CodePointSet::Of(0x10000 + ((*unit - 0xD800) << 10) + (*low - 0xDC00)));
      }
      pos_ = at;
    }
    return Exactly(CodePointSet::Of(*unit));
  }

  // \u{H…}.
  absl::StatusOr<Sets> Braced() {
    ++pos_;  // '{'
    uint32_t value = 0;
    const size_t first = pos_;
    while (HexValue(Peek()) >= 0 && value <= kMaxCodePoint)
      value = value * 16 + HexValue(text_[pos_++]);
    if (pos_ == first || Peek() != '}' || value > kMaxCodePoint) {
      return Error("a \\u{…} escape that is not 1 to 6 hex digits up to 10FFFF and '}'");
    }
    ++pos_;
    return Exactly(CodePointSet::Of(value));
  }

  std::vector<uint32_t> text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<RegexNode> ParseRegex(absl::string_view pattern) {
  std::vector<uint32_t> text;
  if (!DecodeUtf8(pattern, text)) return absl::InvalidArgumentError("the pattern is not UTF-8");
  if (text.size() > kMaxPatternLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("a pattern longer than ", kMaxPatternLength, " characters is not supported"));
  }
  return Parser(std::move(text)).Parse();
}

}  // namespace arbor::grammar
