// The C++ side of bench/grammar/schema_coverage.py: compiles JSON Schemas with Arbor and draws
// documents from each by two generators that know nothing of the schema, for Python's
// `jsonschema` to judge. Reads one JSON request per line on stdin,
//   {"schema": TEXT, "walks": N, "seed": S}
// and answers one line each,
//   {"compiled": true, "documents": [...], "unfinished": K}  or
//   {"compiled": false, "code": "INVALID_ARGUMENT", "error": MESSAGE}
// Byte walks (grammar/random_document.h) take a random byte the matcher accepts at each step;
// token walks take a random token from the decoder's own masks (grammar/constraint.h) over a
// small byte-level vocabulary with multi-byte pieces, as constrained decoding does. A walk that
// runs past its length limit is counted in "unfinished", not judged.
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/constraint.h"
#include "grammar/json_grammar.h"
#include "grammar/random_document.h"
#include "grammar/token_trie.h"
#include "nlohmann/json.hpp"

namespace {

using arbor::grammar::TokenBits;

// Every byte but NUL (id 0 is the end token), and pieces that cross JSON's token boundaries.
std::shared_ptr<const arbor::grammar::TokenTrie> Vocabulary() {
  std::vector<std::string> tokens = {""};
  for (int b = 1; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  for (const char* piece : {"{\"", "\":", "\": ", "\",", "\"}", "\"]", "},", "}]", "]}", ", \"",
                            "[{", "true", "false", "null", "12", "0.", "e-", "-1", "\\n", "\\\"",
                            "\\u00", "name", "\xC3\xA9", "\n  ", "  ", "2024-", "@", ".com"}) {
    tokens.push_back(piece);
  }
  return std::make_shared<const arbor::grammar::TokenTrie>(tokens);
}

// A document drawn token by token from the masks, or nothing past `max_tokens`.
std::optional<std::string> TokenWalk(const std::shared_ptr<arbor::grammar::CompiledConstraint>& c,
                                     std::mt19937_64& rng, int max_tokens) {
  arbor::grammar::ConstraintState state(c);
  const std::vector<int32_t> ends = {0};
  std::string text;
  TokenBits bits;
  for (int step = 0; step < max_tokens; ++step) {
    state.Mask(ends, bits);
    // The end as soon as it is allowed and a coin says so (always in the second half).
    if (arbor::grammar::TestBit(bits, 0) &&
        (step > max_tokens / 2 || std::uniform_int_distribution<int>(0, 3)(rng) == 0)) {
      return text;
    }
    std::vector<int32_t> allowed;
    for (int32_t id = 1; id < c->trie().vocab_size(); ++id) {
      if (arbor::grammar::TestBit(bits, id)) allowed.push_back(id);
    }
    if (allowed.empty()) return arbor::grammar::TestBit(bits, 0) ? std::optional(text) : std::nullopt;
    const int32_t token = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    if (!state.Add(token)) return std::nullopt;
    text += c->trie().bytes(token);
  }
  return std::nullopt;
}

nlohmann::json Answer(const nlohmann::json& request,
                      const std::shared_ptr<const arbor::grammar::TokenTrie>& trie) {
  absl::StatusOr<arbor::grammar::JsonGrammar> grammar =
      arbor::grammar::CompileJsonSchema(request["schema"].get<std::string>());
  if (!grammar.ok()) {
    return {{"compiled", false},
            {"code", absl::StatusCodeToString(grammar.status().code())},
            {"error", std::string(grammar.status().message())}};
  }
  std::mt19937_64 rng(request.value("seed", 1));
  const int walks = request.value("walks", 20);
  nlohmann::json documents = nlohmann::json::array();
  int unfinished = 0;
  for (int i = 0; i < walks; ++i) {
    std::optional<std::string> document = arbor::grammar::RandomDocument(
        *grammar, rng, std::uniform_int_distribution<size_t>(0, 150)(rng));
    document ? documents.push_back(*document) : void(++unfinished);
  }
  auto compiled = std::make_shared<arbor::grammar::CompiledConstraint>(*grammar, trie,
                                                                       trie->vocab_size());
  for (int i = 0; i < walks / 4; ++i) {
    std::optional<std::string> document = TokenWalk(compiled, rng, 200);
    document ? documents.push_back(*document) : void(++unfinished);
  }
  return {{"compiled", true}, {"documents", documents}, {"unfinished", unfinished}};
}

}  // namespace

int main() {
  const auto trie = Vocabulary();
  std::string line;
  while (std::getline(std::cin, line)) {
    std::cout << Answer(nlohmann::json::parse(line), trie).dump(-1, ' ', false,
                                                               nlohmann::json::error_handler_t::replace)
              << "\n"
              << std::flush;
  }
  return 0;
}
