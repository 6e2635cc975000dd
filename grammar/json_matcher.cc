#include "grammar/json_matcher.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

namespace arbor::grammar {
namespace {

// Object phases; kObjTag: a discriminated object's tag value, read in the frame itself
// (node.tags' node in `a`).
enum : uint8_t { kObjOpen, kObjFirst, kObjKey, kObjColon, kObjValue, kObjAfter, kObjNext, kObjTag };
// Array phases.
enum : uint8_t { kArrOpen, kArrFirst, kArrAfter, kArrNext };
// String phases.
enum : uint8_t { kStrOpen, kStrBody, kStrEscape, kStrHex, kStrUtf8 };
// Number phases; kNumZero, kNumInt, kNumFrac and kNumExp may end the number.
enum : uint8_t {
  kNumStart,
  kNumMinus,
  kNumZero,
  kNumInt,
  kNumDot,
  kNumFrac,
  kNumE,
  kNumExpSign,
  kNumExp
};

// The escapes a string may write besides \\u, and the characters they stand for.
constexpr std::pair<uint8_t, uint32_t> kShortEscapes[] = {
    {'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 0x08}, {'f', 0x0C}, {'n', 0x0A}, {'r', 0x0D},
    {'t', 0x09}};

bool IsDigit(uint8_t byte) { return byte >= '0' && byte <= '9'; }
bool IsHex(uint8_t byte) {
  return IsDigit(byte) || (byte >= 'a' && byte <= 'f') || (byte >= 'A' && byte <= 'F');
}

// Property i may come next after properties [0, next) are done: no required one is skipped.
bool KeyAllowed(const Node& node, int next, int32_t i) {
  return i >= next && i < static_cast<int32_t>(node.properties.size()) &&
         i <= node.required_from[next];
}

bool RequiredLeft(const Node& node, int next) {
  return node.required_from[next] < static_cast<int32_t>(node.properties.size());
}

// A UTF-8 lead byte starts a character: how many continuation bytes it announces, and the
// least code point such a sequence encodes (shorter forms would be overlong); 0 for no lead.
uint32_t StartCharacter(Frame& frame, uint8_t byte) {
  uint32_t low = 0;
  if (byte >= 0xC2 && byte <= 0xDF) {
    frame.count = 1;
    low = 0x80;
  } else if (byte >= 0xE0 && byte <= 0xEF) {
    frame.count = 2;
    low = 0x800;
  } else if (byte >= 0xF0 && byte <= 0xF4) {
    frame.count = 3;
    low = 0x10000;
  } else {
    return 0;
  }
  frame.phase = kStrUtf8;
  frame.whitespace = byte;  // The lead narrows its first continuation byte.
  frame.b = byte & (0x3F >> frame.count);
  return low;
}

// A bounded number keeps its integer part's magnitude in a (low 32 bits) and b (the rest, and
// bit 30 for a minus sign), so each digit is checked against the bounds (number_bounds.h). Its
// fraction needs only whether the digits so far equal a bound's: the magnitude is dropped at the
// point, for two bits in b, so fractions share their frames (and the masker's cached masks).
constexpr int32_t kNegativeBit = 1 << 30;
constexpr int32_t kTightLowBit = 1 << 29;
constexpr int32_t kTightHighBit = 1 << 28;

bool Negative(const Frame& frame) { return (frame.b & kNegativeBit) != 0; }
int64_t Magnitude(const Frame& frame) {
  return (static_cast<int64_t>(frame.b & (kNegativeBit - 1)) << 32) |
         static_cast<uint32_t>(frame.a);
}
void SetMagnitude(Frame& frame, int64_t magnitude) {
  frame.a = static_cast<int32_t>(static_cast<uint32_t>(magnitude));
  frame.b = static_cast<int32_t>(magnitude >> 32) | (frame.b & kNegativeBit);
}
FractionTight Tight(const Frame& frame) {
  return {.low = (frame.b & kTightLowBit) != 0, .high = (frame.b & kTightHighBit) != 0};
}
void SetTight(Frame& frame, FractionTight tight) {
  frame.a = 0;
  frame.b =
      (frame.b & kNegativeBit) | (tight.low ? kTightLowBit : 0) | (tight.high ? kTightHighBit : 0);
}

// Well-formed UTF-8 only (no overlong forms, surrogates or code points past U+10FFFF): whether
// `byte` may follow `lead` (0 after the first continuation byte, which any continuation may
// follow).
bool ContinuationAllowed(uint8_t lead, uint8_t byte) {
  uint8_t low = 0x80, high = 0xBF;
  if (lead == 0xE0) low = 0xA0;
  if (lead == 0xED) high = 0x9F;
  if (lead == 0xF0) low = 0x90;
  if (lead == 0xF4) high = 0x8F;
  return byte >= low && byte <= high;
}

}  // namespace

JsonMatcher::JsonMatcher(const JsonGrammar* grammar) : grammar_(grammar) {
  stack_.push_back(Frame{.node = grammar->root});
}

JsonMatcher::JsonMatcher(const JsonGrammar* grammar, const Frame& top) : grammar_(grammar) {
  stack_.push_back(top);
}

bool JsonMatcher::Whitespace(Frame& frame, uint8_t byte) {
  // frame.whitespace: 0 none yet, 1 one space (the gap is full), 2 + n a newline and n indents.
  if (frame.whitespace == 0 && (byte == ' ' || byte == '\n')) {
    frame.whitespace = byte == ' ' ? 1 : 2;
    return true;
  }
  if (frame.whitespace >= 2 && frame.whitespace < 2 + kMaxIndent && (byte == ' ' || byte == '\t')) {
    ++frame.whitespace;
    return true;
  }
  return false;
}

JsonMatcher::Fed JsonMatcher::Feed(uint8_t byte) {
  while (!stack_.empty()) {
    int32_t push = -1;
    switch (StepFrame(stack_.back(), byte, push)) {
      case Step::kReject:
        return Fed::kRejected;
      case Step::kConsume:
        return Fed::kAccepted;
      case Step::kConsumePop:
        if (stack_.size() <= floor_) return Fed::kLeftFloor;
        stack_.pop_back();
        return Fed::kAccepted;
      case Step::kPopRetry:
        if (stack_.size() <= floor_) return Fed::kLeftFloor;
        stack_.pop_back();
        continue;
      case Step::kRetry:
        continue;
      case Step::kPushRetry:
        if (stack_.size() + frames_below_ >= kMaxNesting) return Fed::kRejected;
        stack_.push_back(Frame{.node = push});
        continue;
    }
  }
  return Fed::kRejected;  // Nothing follows a closed root.
}

bool JsonMatcher::FeedAll(absl::string_view bytes) {
  for (char c : bytes) {
    if (Feed(static_cast<uint8_t>(c)) != Fed::kAccepted) return false;
  }
  return true;
}

bool JsonMatcher::CanEndFrame(const Frame& frame) const {
  const Node& node = grammar_->nodes[frame.node];
  switch (node.kind) {
    case NodeKind::kNumber:
    case NodeKind::kInteger:
      return NumberMayEnd(frame);
    case NodeKind::kLiterals:
      return node.names.Ending(frame.a) >= 0;
    default:
      return false;
  }
}

bool JsonMatcher::AcceptsEnd() const {
  return stack_.empty() || (stack_.size() == 1 && CanEndFrame(stack_.back()));
}

JsonMatcher::Step JsonMatcher::StepFrame(Frame& frame, uint8_t byte, int32_t& push) {
  const Node& node = grammar_->nodes[frame.node];
  switch (node.kind) {
    case NodeKind::kObject:
    case NodeKind::kDiscriminated:
      return StepObject(frame, byte, push);
    case NodeKind::kArray:
      return StepArray(frame, byte, push);
    case NodeKind::kString:
      return StepString(frame, byte);
    case NodeKind::kNumber:
      return StepNumber(frame, byte, /*integer=*/false);
    case NodeKind::kInteger:
      return StepNumber(frame, byte, /*integer=*/true);
    case NodeKind::kLiterals:
      return StepLiterals(frame, byte, node);
    case NodeKind::kUnion:
      return StepUnion(frame, byte);
  }
  return Step::kReject;
}

JsonMatcher::Step JsonMatcher::StepObject(Frame& frame, uint8_t byte, int32_t& push) {
  const Node& node = grammar_->nodes[frame.node];
  switch (frame.phase) {
    case kObjOpen:
      if (byte != '{') return Step::kReject;
      frame.phase = kObjFirst;
      return Step::kConsume;
    case kObjFirst:
    case kObjNext:
      if (Whitespace(frame, byte)) return Step::kConsume;
      frame.whitespace = 0;
      if (byte == '}' && frame.phase == kObjFirst && !RequiredLeft(node, frame.count)) {
        return Step::kConsumePop;
      }
      if (byte != '"') return Step::kReject;
      if (node.free_form) {
        frame.phase = kObjColon;
        push = grammar_->any_string;
        return Step::kPushRetry;
      }
      if (!KeyAllowed(node, frame.count, frame.count)) return Step::kReject;
      frame.phase = kObjKey;
      frame.a = node.names.Child(StringTrie::kRoot, '"');  // Every key starts with its quote.
      return Step::kConsume;
    case kObjKey:
      return StepKey(frame, byte);
    case kObjColon:
      if (Whitespace(frame, byte)) return Step::kConsume;
      if (byte != ':') return Step::kReject;
      frame.whitespace = 0;
      frame.phase = kObjValue;
      return Step::kConsume;
    case kObjValue:
      if (Whitespace(frame, byte)) return Step::kConsume;
      frame.whitespace = 0;
      if (node.kind == NodeKind::kDiscriminated) {
        frame.phase = kObjTag;
        frame.a = StringTrie::kRoot;
        return Step::kRetry;
      }
      frame.phase = kObjAfter;
      push = !node.free_form   ? node.properties[frame.count - 1].value
             : node.items >= 0 ? node.items
                               : grammar_->any_value;
      return Step::kPushRetry;
    case kObjAfter:
      if (Whitespace(frame, byte)) return Step::kConsume;
      frame.whitespace = 0;
      if (byte == '}' && !RequiredLeft(node, frame.count)) return Step::kConsumePop;
      if (byte == ',' && (node.free_form || KeyAllowed(node, frame.count, frame.count))) {
        frame.phase = kObjNext;
        return Step::kConsume;
      }
      return Step::kReject;
    case kObjTag:
      return StepTag(frame, byte);
  }
  return Step::kReject;
}

// Once a tag value is whole, the frame becomes its alternative's object, past that property (a
// value is a JSON string, so none is a prefix of another).
JsonMatcher::Step JsonMatcher::StepTag(Frame& frame, uint8_t byte) const {
  const Node& node = grammar_->nodes[frame.node];
  const int32_t next = node.tags.Child(frame.a, byte);
  if (next < 0) return Step::kReject;
  frame.a = next;
  if (const int32_t tag = node.tags.Ending(next); tag >= 0) {
    frame = Frame{.node = node.alternatives[tag], .phase = kObjAfter, .count = 1};
  }
  return Step::kConsume;
}

// frame.a is the node of the key's bytes so far in the keys' trie: a byte goes on when some key
// through it may come next.
JsonMatcher::Step JsonMatcher::StepKey(Frame& frame, uint8_t byte) {
  const Node& node = grammar_->nodes[frame.node];
  const int32_t next = node.names.Child(frame.a, byte);
  if (next < 0 || !KeyAllowed(node, frame.count, node.names.FirstFrom(next, frame.count))) {
    return Step::kReject;
  }
  frame.a = next;
  // A key's closing quote ends it, and no other key runs through it (inner quotes are escaped).
  if (const int32_t key = node.names.Ending(next); key >= 0) {
    frame.count = static_cast<uint16_t>(key + 1);
    frame.phase = kObjColon;
  }
  return Step::kConsume;
}

JsonMatcher::Step JsonMatcher::StepArray(Frame& frame, uint8_t byte, int32_t& push) {
  const Node& node = grammar_->nodes[frame.node];
  const bool enough = frame.count >= node.min_items;
  switch (frame.phase) {
    case kArrOpen:
      if (byte != '[') return Step::kReject;
      frame.phase = kArrFirst;
      return Step::kConsume;
    case kArrFirst:
    case kArrNext:
      if (Whitespace(frame, byte)) return Step::kConsume;
      frame.whitespace = 0;
      if (byte == ']' && frame.phase == kArrFirst && enough) return Step::kConsumePop;
      if (node.max_items == 0) return Step::kReject;
      frame.phase = kArrAfter;
      // Unbounded arrays count only as far as minItems and prefixItems need, so their states stay
      // few; count is then the item's position, from 1.
      frame.count = static_cast<uint16_t>(
          node.max_items >= 0
              ? frame.count + 1
              : std::min<int>(frame.count + 1,
                              std::max<int>(node.min_items, node.prefix.size() + 1)));
      push = static_cast<size_t>(frame.count) <= node.prefix.size() ? node.prefix[frame.count - 1]
                                                                   : node.items;
      return Step::kPushRetry;
    case kArrAfter:
      if (Whitespace(frame, byte)) return Step::kConsume;
      frame.whitespace = 0;
      if (byte == ']' && enough) return Step::kConsumePop;
      if (byte == ',' && (node.max_items < 0 || frame.count < node.max_items)) {
        frame.phase = kArrNext;
        return Step::kConsume;
      }
      return Step::kReject;
  }
  return Step::kReject;
}

// A string keeps a UTF-8 lead byte in `whitespace` (strings have no gaps) until its first
// continuation byte, and a constrained one (node.text) its automaton state in `a` and the code
// point being decoded in `b`.
JsonMatcher::Step JsonMatcher::StepString(Frame& frame, uint8_t byte) const {
  const int32_t text = grammar_->nodes[frame.node].text;
  const StringAutomaton* automaton = text >= 0 ? &grammar_->texts[text] : nullptr;
  // A whole character, through the automaton.
  auto character = [&](uint32_t code_point) {
    if (automaton != nullptr) {
      const int32_t next = automaton->Next(frame.a, code_point);
      if (next < 0) return Step::kReject;
      frame.a = next;
    }
    frame.phase = kStrBody;
    return Step::kConsume;
  };
  // Part of a character: some code point it can still become must go on.
  auto partial = [&](uint32_t low, uint32_t high) {
    const int shift = 6 * frame.count;
    const uint32_t lo = std::max(low, static_cast<uint32_t>(frame.b) << shift);
    const uint32_t hi = std::min(high, lo | ((1u << shift) - 1));
    return automaton == nullptr || (lo <= hi && automaton->Viable(frame.a, lo, hi))
               ? Step::kConsume
               : Step::kReject;
  };
  switch (frame.phase) {
    case kStrOpen:
      if (byte != '"') return Step::kReject;
      frame.phase = kStrBody;
      frame.a = StringAutomaton::kStart;
      return Step::kConsume;
    case kStrBody:
      if (byte == '"') {
        return automaton == nullptr || automaton->Accepting(frame.a) ? Step::kConsumePop
                                                                      : Step::kReject;
      }
      if (byte == '\\') {
        // Some escape must go on from here.
        if (automaton != nullptr && std::none_of(std::begin(kShortEscapes), std::end(kShortEscapes),
                                                 [&](const auto& escape) {
                                                   return automaton->Next(frame.a,
                                                                          escape.second) >= 0;
                                                 })) {
          return Step::kReject;
        }
        frame.phase = kStrEscape;
        return Step::kConsume;
      }
      if (byte < 0x20) return Step::kReject;  // Control characters must be escaped.
      if (byte < 0x80) return character(byte);
      if (const uint32_t low = StartCharacter(frame, byte); low > 0) {
        if (automaton == nullptr) frame.b = 0;
        return partial(low, kMaxCodePoint);
      }
      return Step::kReject;
    case kStrUtf8: {
      if (!ContinuationAllowed(frame.whitespace, byte)) return Step::kReject;
      frame.whitespace = 0;
      // Only a constrained string decodes the code point: others keep fewer distinct frames.
      if (automaton != nullptr) frame.b = (frame.b << 6) | (byte & 0x3F);
      if (--frame.count == 0) return character(static_cast<uint32_t>(std::exchange(frame.b, 0)));
      return partial(0, kMaxCodePoint);
    }
    case kStrEscape:
      if (byte == 'u' && automaton == nullptr) {
        frame.phase = kStrHex;
        frame.count = 0;
        return Step::kConsume;
      }
      for (const auto& [escape, code_point] : kShortEscapes) {
        if (byte == escape) return character(code_point);
      }
      return Step::kReject;
    case kStrHex:
      if (!IsHex(byte)) return Step::kReject;
      if (++frame.count == 4) frame.phase = kStrBody;
      return Step::kConsume;
  }
  return Step::kReject;
}

bool JsonMatcher::NumberMayEnd(const Frame& frame) const {
  const NumberBounds& bounds = grammar_->nodes[frame.node].bounds;
  switch (frame.phase) {
    case kNumZero:
    case kNumInt:
      return !bounds.bounded || ContainsInteger(bounds, Negative(frame), Magnitude(frame));
    case kNumFrac:
      return !bounds.bounded || FractionMayEnd(bounds, Negative(frame), Tight(frame), frame.count);
    case kNumExp:
      return true;
    default:
      return false;
  }
}

JsonMatcher::Step JsonMatcher::StepNumber(Frame& frame, uint8_t byte, bool integer) const {
  const NumberBounds& bounds = grammar_->nodes[frame.node].bounds;
  integer = integer || bounds.integer_only;
  const bool digit = IsDigit(byte);
  const bool exponent = !integer && !bounds.bounded && (byte == 'e' || byte == 'E');
  auto to = [&frame](uint8_t phase, uint16_t count) {
    frame.phase = phase;
    frame.count = count;
    return Step::kConsume;
  };
  // The integer part with one more digit, when the bounds leave it a way to go on.
  auto more = [&](uint8_t phase, int digits) {
    if (!bounds.bounded) return to(phase, digits);
    const int64_t magnitude = Magnitude(frame) * 10 + (byte - '0');
    if (!PrefixViable(bounds, Negative(frame), magnitude, digits)) return Step::kReject;
    SetMagnitude(frame, magnitude);
    return to(phase, digits);
  };
  // One more fraction digit, when the bounds leave it a way to go on.
  auto fraction = [&](int digits) {
    if (!bounds.bounded) return to(kNumFrac, digits);
    const std::optional<FractionTight> tight =
        FractionDigit(bounds, Negative(frame), Tight(frame), digits, byte - '0');
    if (!tight) return Step::kReject;
    SetTight(frame, *tight);
    return to(kNumFrac, digits);
  };
  switch (frame.phase) {
    case kNumStart:
      if (byte == '-') {
        if (bounds.bounded && !PrefixViable(bounds, /*negative=*/true, 0, 0)) return Step::kReject;
        frame.b = bounds.bounded ? kNegativeBit : 0;
        return to(kNumMinus, 0);
      }
      [[fallthrough]];
    case kNumMinus:
      if (byte == '0') return more(kNumZero, 1);
      if (digit) return more(kNumInt, 1);
      return Step::kReject;
    case kNumZero:
    case kNumInt:
      if (digit && frame.phase == kNumInt && frame.count < kMaxNumberDigits) {
        return more(kNumInt, frame.count + 1);
      }
      if (!integer && byte == '.') {
        if (!bounds.bounded) return to(kNumDot, 0);
        if (const std::optional<FractionTight> tight =
                StartFraction(bounds, Negative(frame), Magnitude(frame))) {
          SetTight(frame, *tight);
          return to(kNumDot, 0);
        }
      }
      if (exponent) return to(kNumE, 0);
      return NumberMayEnd(frame) ? Step::kPopRetry : Step::kReject;
    case kNumDot:
    case kNumFrac:
      if (digit && frame.count < kMaxNumberDigits) return fraction(frame.count + 1);
      if (frame.phase == kNumDot) return Step::kReject;
      if (exponent) return to(kNumE, 0);
      return NumberMayEnd(frame) ? Step::kPopRetry : Step::kReject;
    case kNumE:
      if (byte == '+' || byte == '-') return to(kNumExpSign, 0);
      return digit ? to(kNumExp, 1) : Step::kReject;
    case kNumExpSign:
      return digit ? to(kNumExp, 1) : Step::kReject;
    case kNumExp:
      if (digit && frame.count < kMaxExponentDigits) return to(kNumExp, frame.count + 1);
      return Step::kPopRetry;
  }
  return Step::kReject;
}

// frame.a is the node of the bytes so far in the literals' trie.
JsonMatcher::Step JsonMatcher::StepLiterals(Frame& frame, uint8_t byte, const Node& node) const {
  const int32_t next = node.names.Child(frame.a, byte);
  if (next >= 0) {
    frame.a = next;
    return node.names.HasChildren(next) ? Step::kConsume : Step::kConsumePop;
  }
  // No literal goes on: one that ends here (a number such as 1 beside 12) hands the byte back.
  if (node.names.Ending(frame.a) >= 0) return Step::kPopRetry;
  return Step::kReject;
}

JsonMatcher::Step JsonMatcher::StepUnion(Frame& frame, uint8_t byte) const {
  for (int32_t alternative : grammar_->nodes[frame.node].alternatives) {
    if (grammar_->first_bytes[alternative][byte]) {
      frame = Frame{.node = alternative};
      return Step::kRetry;
    }
  }
  return Step::kReject;
}

}  // namespace arbor::grammar
