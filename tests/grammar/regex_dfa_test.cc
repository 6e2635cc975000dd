// The pattern compiler (regex_parser.h, regex_dfa.h, dfa_algebra.h) against independent
// references: std::regex's ECMAScript grammar with regex_search on random patterns and random
// ASCII strings (acceptance must agree exactly, intersections included), Python's `re` through
// `jsonschema` on random walks of any code points, and hand cases beyond ASCII and refusals.
#include "grammar/regex_dfa.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "grammar/dfa_algebra.h"
#include "grammar/random_document.h"
#include "grammar/regex_parser.h"
#include "nlohmann/json.hpp"
#include "tests/grammar/grammar_test_util.h"
#include "tests/support/python_reference.h"
#include "tests/support/test_seed.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;

bool DfaAccepts(const CodePointDfa& dfa, const std::u32string& text) {
  int32_t state = 0;
  for (char32_t c : text) {
    const std::vector<CodePointRange>& ranges = dfa.states[state].ranges;
    state = -1;
    for (const CodePointRange& range : ranges) {
      if (c >= range.lo && c <= range.hi) state = range.next;
    }
    if (state < 0) return false;
  }
  return dfa.states[state].accepting;
}

CodePointDfa Compiled(const std::string& pattern) {
  absl::StatusOr<CodePointDfa> dfa = CompileRegex(pattern);
  EXPECT_TRUE(dfa.ok()) << pattern << ": " << dfa.status();
  return dfa.ok() ? *std::move(dfa) : CodePointDfa{.states = {CodePointDfa::State{}}};
}

// Random patterns in the subset, over the characters the random strings draw from.
class PatternGenerator {
 public:
  explicit PatternGenerator(std::mt19937_64& rng) : rng_(rng) {}

  std::string Alternation(int depth) {
    std::string out = Concat(depth);
    while (Pick(4) == 0) absl::StrAppend(&out, "|", Concat(depth));
    return out;
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::string Concat(int depth) {
    std::string out;
    for (int n = Pick(4); n >= 0; --n) {
      if (Pick(12) == 0) {
        out += Pick(2) == 0 ? "^" : "$";
        continue;
      }
      out += Atom(depth);
      static const char* const kQuantifiers[] = {"", "", "", "*", "+", "?", "{2}", "{1,}", "{0,2}"};
      const std::string quantifier = kQuantifiers[Pick(9)];
      out += quantifier;
      if (!quantifier.empty() && Pick(4) == 0) out += "?";  // Lazy.
    }
    return out;
  }

  std::string Atom(int depth) {
    static const char* const kAtoms[] = {"a",    "b",    "c",       "1",      "-",      ".",
                                         "[ab]", "[^a]", "[a-c]",   "\\d",    "\\w",    "\\s",
                                         "\\D",  "\\W",  "\\S",     "[\\d_]", "[^\\s]", "[^\\w-]",
                                         "\\.",  "\\n",  "\\u0061", "\\x62",  "[]",     "[^]"};
    if (depth > 0 && Pick(5) == 0) {
      const char* const opens[] = {"(", "(?:", "(?<g>"};
      return absl::StrCat(opens[Pick(depth > 1 ? 2 : 3)], Alternation(depth - 1), ")");
    }
    return kAtoms[Pick(sizeof(kAtoms) / sizeof(kAtoms[0]))];
  }

  std::mt19937_64& rng_;
};

std::string RandomText(std::mt19937_64& rng) {
  static const char kAlphabet[] = "abc1_ .\n-\t";
  std::string text;
  for (int n = std::uniform_int_distribution<int>(0, 7)(rng); n > 0; --n) {
    text += kAlphabet[std::uniform_int_distribution<size_t>(0, sizeof(kAlphabet) - 2)(rng)];
  }
  return text;
}

std::u32string Wide(const std::string& ascii) { return std::u32string(ascii.begin(), ascii.end()); }

TEST(RegexDfa, AgreesWithStdRegexSearchOnRandomPatterns) {
  std::mt19937_64 rng(TestSeed());
  PatternGenerator generator(rng);
  int too_large = 0;
  for (int p = 0; p < 300; ++p) {
    const std::string pattern = generator.Alternation(1);
    // std::regex knows no named groups: the same group unnamed for it.
    const std::string unnamed = absl::StrReplaceAll(pattern, {{"(?<g>", "("}});
    const std::regex reference(unnamed, std::regex::ECMAScript);
    absl::StatusOr<CodePointDfa> dfa = CompileRegex(pattern);
    if (!dfa.ok()) {  // Only by the state limit, and rarely (below).
      EXPECT_THAT(dfa.status().message(), HasSubstr("more than 10000 states")) << pattern;
      ++too_large;
      continue;
    }
    for (int s = 0; s < 40; ++s) {
      const std::string text = RandomText(rng);
      EXPECT_EQ(DfaAccepts(*dfa, Wide(text)), std::regex_search(text, reference))
          << "pattern " << pattern << " text \"" << text << "\"";
    }
  }
  EXPECT_LT(too_large, 15);
}

TEST(RegexDfa, IntersectionAcceptsWhatBothAccept) {
  std::mt19937_64 rng(TestSeed());
  PatternGenerator generator(rng);
  for (int p = 0; p < 100; ++p) {
    const std::string first = generator.Alternation(1), second = generator.Alternation(1);
    absl::StatusOr<CodePointDfa> both =
        IntersectDfas(Compiled(first), Compiled(second), kMaxStringStates);
    ASSERT_TRUE(both.ok()) << both.status();
    const std::regex x(absl::StrReplaceAll(first, {{"(?<g>", "("}}), std::regex::ECMAScript);
    const std::regex y(absl::StrReplaceAll(second, {{"(?<g>", "("}}), std::regex::ECMAScript);
    for (int s = 0; s < 30; ++s) {
      const std::string text = RandomText(rng);
      EXPECT_EQ(DfaAccepts(*both, Wide(text)),
                std::regex_search(text, x) && std::regex_search(text, y))
          << first << " and " << second << " on \"" << text << "\"";
    }
  }
}

TEST(RegexDfa, IsMinimal) {
  EXPECT_EQ(Compiled("^(?:a|b)*$").states.size(), 1u);
  EXPECT_EQ(Compiled("a").states.size(), 2u);  // Before an "a", and after one.
  EXPECT_EQ(Compiled("(?:ab|ab)+?").states.size(), Compiled("ab").states.size());
  EXPECT_EQ(Compiled("$a").states.size(), 1u);  // Nothing matches: one state, no transitions.
  EXPECT_TRUE(Compiled("$a").states[0].ranges.empty());
  const CodePointDfa dfa = Compiled("^[a-z]{2,5}(?:-[0-9]+)?$");
  EXPECT_EQ(MinimizeDfa(dfa).states.size(), dfa.states.size());
}

TEST(RegexDfa, CodePointsBeyondAscii) {
  const CodePointDfa space = Compiled("^\\s$");
  for (char32_t c : {U'\u00A0', U'\u1680', U'\u2003', U'\u2028', U'\u202F', U'\u3000', U'\t'}) {
    EXPECT_TRUE(DfaAccepts(space, {c})) << static_cast<uint32_t>(c);
  }
  // U+FEFF is ECMA-262's space only, U+0085 Python's only: neither is generated by either side.
  EXPECT_FALSE(DfaAccepts(space, U"\uFEFF"));
  EXPECT_FALSE(DfaAccepts(Compiled("^\\S$"), U"\u0085"));
  EXPECT_TRUE(DfaAccepts(Compiled("^\\S$"), U"\u00E9"));
  EXPECT_FALSE(DfaAccepts(Compiled("^\\d$"), U"\u0663"));  // ARABIC-INDIC DIGIT THREE.
  EXPECT_FALSE(DfaAccepts(Compiled("^\\D$"), U"\u0663"));  // A digit to Python's `re`.
  EXPECT_FALSE(DfaAccepts(Compiled("^\\W$"), U"\u00E9"));  // A word character to Python.
  EXPECT_TRUE(DfaAccepts(Compiled("^.$"), U"\U0001F642"));
  EXPECT_FALSE(DfaAccepts(Compiled("^.$"), U"\u2028"));
  EXPECT_TRUE(DfaAccepts(Compiled("^\\u{1F642}$"), U"\U0001F642"));
  EXPECT_TRUE(DfaAccepts(Compiled("^\\uD83D\\uDE42$"), U"\U0001F642"));
  EXPECT_TRUE(DfaAccepts(Compiled("^[\u00E0-\u00FF]+$"), U"\u00E9\u00E8"));
  EXPECT_TRUE(DfaAccepts(Compiled("^\\cJ$"), U"\n"));
  EXPECT_TRUE(DfaAccepts(Compiled("^[\\b]$"), U"\b"));
  EXPECT_TRUE(DfaAccepts(Compiled("^\\/\\]}$"), U"/]}"));
}

TEST(RegexDfa, RefusesWhatItCannotEnforceSayingWhat) {
  const std::pair<std::string, std::string> kRefused[] = {
      {"(?=a)", "lookaround"},
      {"(?!a)", "lookaround"},
      {"(?<=a)b", "lookaround"},
      {"(?<!a)b", "lookaround"},
      {"(a)\\1", "backreference"},
      {"(?<n>a)\\k<n>", "backreference"},
      {"\\bword", "word boundary"},
      {"a\\B", "word boundary"},
      {"\\p{L}", "Unicode property"},
      {"a{1001}", "repeat count above 1000"},
      {"(?i)a", "inline flags"},
      {"a.{40}", "more than 10000 states"},
      {"((a{999}){999})", "expand to more than"},
      {std::string(70, '(') + std::string(70, ')'), "nesting groups"},
      {"(a", "without its ')'"},
      {"a)", "')' without a '('"},
      {"[a", "without its ']'"},
      {"a**", "nothing to repeat"},
      {"*a", "nothing to repeat"},
      {"^*", "nothing to repeat"},
      {"[z-a]", "out of order"},
      {"a\\", "at the pattern's end"},
      {"a{", "write \\{"},
      {"\\u{110000}", "10FFFF"},
      {"\\q", "unknown escape"},
      {"[\\d-z]", "class escape"},
      {"\xff", "not UTF-8"},
      {std::string(kMaxPatternLength + 1, 'a'), "longer than"}};
  for (const auto& [pattern, why] : kRefused) {
    absl::StatusOr<CodePointDfa> dfa = CompileRegex(pattern);
    ASSERT_FALSE(dfa.ok()) << pattern;
    EXPECT_EQ(dfa.status().code(), absl::StatusCode::kInvalidArgument) << pattern;
    EXPECT_THAT(dfa.status().message(), HasSubstr(why)) << pattern;
  }
  // In a schema: by keyword and pointer when only strings are allowed, else no strings.
  EXPECT_THAT(CompileError(R"j({"properties": {"p": {"type": "string", "pattern": "(?=a)"}}})j"),
              HasSubstr("at /properties/p/pattern: keyword 'pattern' is not supported so: "
                        "lookaround"));
  absl::StatusOr<JsonGrammar> other = CompileJsonSchema(R"({"pattern": "\\1"})");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(Accepts(*other, "12"));
  EXPECT_FALSE(Accepts(*other, R"("a")"));
}

// A random string `dfa` accepts, or nothing when it accepts none: random transitions, then past
// `budget` code points only those that bring an accepting state nearer. No surrogates.
std::optional<std::string> RandomMatch(const CodePointDfa& dfa, std::mt19937_64& rng, int budget) {
  // Code points to the nearest accepting state, backwards from those.
  std::vector<int> distance(dfa.states.size(), -1);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < dfa.states.size(); ++s) {
      int best = dfa.states[s].accepting ? 0 : -1;
      for (const CodePointRange& r : dfa.states[s].ranges) {
        if (distance[r.next] >= 0 && (best < 0 || distance[r.next] + 1 < best))
          best = distance[r.next] + 1;
      }
      changed = changed || best != distance[s];
      distance[s] = best;
    }
  }
  if (distance[0] < 0) return std::nullopt;
  std::u32string text;
  for (int32_t state = 0;;) {
    const bool over = static_cast<int>(text.size()) >= budget;
    if (dfa.states[state].accepting && (over || std::uniform_int_distribution<int>(0, 5)(rng) == 0))
      break;
    std::vector<CodePointRange> choices;
    for (const CodePointRange& r : dfa.states[state].ranges) {
      if (distance[r.next] >= 0 && (!over || distance[r.next] < distance[state]))
        choices.push_back(r);
    }
    if (choices.empty()) break;  // Accepting, with nowhere to go.
    const CodePointRange r =
        choices[std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng)];
    uint32_t c = std::uniform_int_distribution<uint32_t>(r.lo, std::min(r.hi, r.lo + 300))(rng);
    if (c >= 0xD800 && c <= 0xDFFF) c = r.lo < 0xD800 ? r.lo : r.hi;  // Ranges end off surrogates.
    text += static_cast<char32_t>(c);
    state = r.next;
  }
  std::string utf8;
  for (char32_t c : text) {
    if (c < 0x80) {
      utf8 += static_cast<char>(c);
    } else if (c < 0x800) {
      utf8 += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
    } else if (c < 0x10000) {
      utf8 += {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
               static_cast<char>(0x80 | (c & 0x3F))};
    } else {
      utf8 += {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
               static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
    }
  }
  return utf8;
}

// Random strings of random patterns, over any code point, all matched by Python's `re` through
// `jsonschema` (whose \d \w \s reach beyond ASCII), and a schema's random walks too.
TEST(RegexDfa, MatchesOfRandomPatternsValidate) {
  std::mt19937_64 rng(TestSeed());
  PatternGenerator generator(rng);
  nlohmann::json items = nlohmann::json::array();
  for (int p = 0; p < 60; ++p) {
    // Python's `re` spells named groups (?P<g>, and reads "[]" and "[^]" as the start of a
    // longer class: none here. One level of groups, as above: `re` backtracks, and quantified
    // groups nested two deep can take it minutes on a 12-character match.
    const std::string pattern = absl::StrReplaceAll(
        generator.Alternation(1), {{"(?<g>", "("}, {"[]", "[ab]"}, {"[^]", "[^a]"}});
    const std::string schema = nlohmann::json({{"type", "string"}, {"pattern", pattern}}).dump();
    absl::StatusOr<CodePointDfa> dfa = CompileRegex(pattern);
    if (!dfa.ok()) continue;  // Past the state limit (the test above bounds how often).
    for (int w = 0; w < 10; ++w) {
      std::optional<std::string> match = RandomMatch(*dfa, rng, 12);
      if (!match) break;  // The pattern matches nothing ("$a").
      items.push_back({{"schema", schema}, {"document", nlohmann::json(*match).dump()}});
    }
  }
  ASSERT_GT(items.size(), 300u);
  const std::string walked =
      R"({"type": "string", "pattern": "^\\w{1,8}@[^\\s@.]{1,8}\\.(?:com|org)$"})";
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(walked);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  for (int w = 0; w < 40; ++w) {
    std::optional<std::string> document = RandomDocument(*grammar, rng, 30);
    ASSERT_TRUE(document.has_value());
    items.push_back({{"schema", walked}, {"document", *document}});
  }
  ExpectAllValid(items);
}

}  // namespace
}  // namespace arbor::grammar
