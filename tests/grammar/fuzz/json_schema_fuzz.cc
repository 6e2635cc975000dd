// CompileJsonSchema on arbitrary bytes (a request's response_format schema is untrusted input):
// it compiles or answers an error. The input's second half, split at the first NUL, is fed to a
// matcher of what compiled, byte by byte, and masks are computed over a small vocabulary on the
// way: neither may crash, a mask must equal the token-by-token reference, and the matcher must
// agree with it on the next byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "grammar/json_grammar.h"
#include "grammar/json_matcher.h"
#include "grammar/token_masker.h"
#include "grammar/token_trie.h"

namespace {

const arbor::grammar::TokenTrie& Vocabulary() {
  static const auto* const kTrie = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 128; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t :
         {"{\"", "\":", "\",", "\"}", "true", "null", "12", "0.", "e-", "]}", "\xC3\xA9", " \""}) {
      tokens.push_back(t);
    }
    return new arbor::grammar::TokenTrie(tokens);
  }();
  return *kTrie;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string schema = input.substr(0, split);
  const std::string document = split == std::string::npos ? "" : input.substr(split + 1);
  absl::StatusOr<arbor::grammar::JsonGrammar> grammar = arbor::grammar::CompileJsonSchema(schema);
  if (!grammar.ok()) return 0;
  const arbor::grammar::TokenTrie& trie = Vocabulary();
  arbor::grammar::TokenMasker masker(&*grammar, &trie, trie.vocab_size());
  arbor::grammar::JsonMatcher matcher(&*grammar);
  arbor::grammar::TokenBits fast, reference;
  const std::vector<int32_t> ends = {0};
  for (size_t i = 0; i < document.size() && i < 64; ++i) {
    masker.Mask(matcher, ends, fast);
    masker.MaskByEachToken(matcher, ends, reference);
    if (fast != reference) abort();
    const uint8_t byte = static_cast<uint8_t>(document[i]);
    const bool allowed = byte != 0 && byte < 128 && arbor::grammar::TestBit(fast, byte);
    const bool fed = matcher.Feed(byte) == arbor::grammar::JsonMatcher::Fed::kAccepted;
    if (fed != allowed && byte != 0 && byte < 128) abort();
    if (!fed) break;
  }
  return 0;
}
