// The index over property names and enum literals (string_trie.h) as the masker uses it: on
// fresh random wide objects and long enums over fresh random vocabularies, masks equal testing
// every token on its own and finished documents validate (Python's `jsonschema`), and a mask's
// cost does not grow with the number of names.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grammar/constraint.h"
#include "grammar/json_grammar.h"
#include "grammar/json_matcher.h"
#include "grammar/token_masker.h"
#include "grammar/token_trie.h"
#include "nlohmann/json.hpp"
#include "tests/grammar/mask_walk.h"
#include "tests/support/python_reference.h"
#include "tests/support/test_seed.h"

namespace arbor::grammar {
namespace {

constexpr char kOracle[] = "tests/grammar/json_schema_oracle.py";

// Names that share prefixes at every length (a, ab, abc, b…), with quotes and escapes.
std::string RandomName(std::mt19937& rng) {
  static const char* const kPieces[] = {"a", "b", "ab", "id", "_", "x\"", "\\", "1", "é"};
  std::string name;
  for (int n = std::uniform_int_distribution<int>(1, 4)(rng); n > 0; --n) {
    name += kPieces[rng() % std::size(kPieces)];
  }
  return name;
}

// An object of many properties, some required, values that are enums of many literals (strings
// and numbers that prefix each other), integers, strings, booleans or any value.
nlohmann::ordered_json RandomWideSchema(std::mt19937& rng) {
  nlohmann::ordered_json properties = nlohmann::ordered_json::object();
  nlohmann::json required = nlohmann::json::array();
  const int count = std::uniform_int_distribution<int>(20, 200)(rng);
  for (int i = 0; i < count; ++i) {
    const std::string name = RandomName(rng);
    if (properties.contains(name)) continue;
    nlohmann::ordered_json value;
    switch (rng() % 5) {
      case 0: {
        nlohmann::json literals = nlohmann::json::array();
        for (int j = 0; j < 30; ++j) {
          if (rng() % 2) {
            literals.push_back(RandomName(rng));
          } else {
            literals.push_back(static_cast<int>(rng() % 200));
          }
        }
        value = {{"enum", literals}};
        break;
      }
      case 1:
        value = {{"type", "integer"}};
        break;
      case 2:
        value = {{"type", "string"}};
        break;
      case 3:
        value = {{"type", "boolean"}};
        break;
      default:
        value = nlohmann::ordered_json::object();
    }
    properties[name] = value;
    if (rng() % 8 == 0) required.push_back(name);
  }
  return {{"type", "object"}, {"properties", properties}, {"required", required}};
}

// A vocabulary of every byte, JSON punctuation, and pieces and joins of the schema's names.
std::vector<std::string> RandomVocabulary(std::mt19937& rng) {
  std::vector<std::string> vocab = {""};
  for (int b = 1; b < 256; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  const std::vector<std::string> punctuation = {"\":", "\": ", "\",\"", ",\"", "{\"", "}", "\"}",
                                                "\\\"", "12", " \"", "\":{", "[]", "null"};
  for (int i = 0; i < 300; ++i) {
    std::string token = rng() % 3 ? RandomName(rng) : punctuation[rng() % punctuation.size()];
    if (rng() % 2) token = (rng() % 2 ? "\"" : "") + token + punctuation[rng() % punctuation.size()];
    vocab.push_back(token);
  }
  vocab.push_back("");  // The end token.
  return vocab;
}

// Random walks through `schema`, each token drawn from the mask; the fast mask must equal the
// token-by-token reference at every step. Finished documents go to `finished`.
void WalkComparingMasks(const std::string& schema, const std::shared_ptr<const TokenTrie>& trie,
                        std::mt19937& rng, nlohmann::json& finished) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  auto compiled = std::make_shared<CompiledConstraint>(*grammar, trie, trie->vocab_size());
  std::vector<std::string> documents;
  CheckConstraintWalks(compiled, *trie, schema, /*walks=*/6, /*steps=*/400, rng, documents);
  for (const std::string& document : documents) {
    finished.push_back({{"schema", schema}, {"document", document}});
  }
}

TEST(NameIndex, MasksOfWideObjectsAndLongEnumsEqualTheTokenByTokenReference) {
  std::mt19937 rng(TestSeed());
  nlohmann::json finished = nlohmann::json::array();
  for (int round = 0; round < 16; ++round) {
    const auto trie = std::make_shared<const TokenTrie>(RandomVocabulary(rng));
    WalkComparingMasks(RandomWideSchema(rng).dump(), trie, rng, finished);
    if (HasFatalFailure()) return;
  }
  ASSERT_GT(finished.size(), 10u) << "too few walks finished to judge";
  const nlohmann::json judged =
      testing::RunPythonReference(kOracle, {{"op", "validate"}, {"items", finished}});
  ASSERT_TRUE(judged.is_object());
  for (size_t i = 0; i < finished.size(); ++i) {
    EXPECT_EQ(judged["results"][i], "") << finished[i]["schema"] << "\n" << finished[i]["document"];
  }
}

// 20,000 optional properties (the size limit's worth): each mask must not scan the names. The
// bound is loose (the walk takes milliseconds); a scan of every name per byte takes minutes.
TEST(NameIndex, AWideObjectsMasksDoNotGrowWithItsProperties) {
  std::string properties;
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&properties, i ? "," : "", "\"f", i, "\":{}");
  const std::string schema = absl::StrCat(R"({"type":"object","properties":{)", properties, "}}");
  ASSERT_LT(schema.size(), static_cast<size_t>(kMaxSchemaBytes));
  std::mt19937 rng(TestSeed());
  std::vector<std::string> vocab = RandomVocabulary(rng);
  for (const char* token : {"\"f1", "999", "\"f19", "\":1", ",\"f2", "0\":"}) vocab.push_back(token);
  const auto trie = std::make_shared<const TokenTrie>(vocab);
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json finished = nlohmann::json::array();
  WalkComparingMasks(schema, trie, rng, finished);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace arbor::grammar
