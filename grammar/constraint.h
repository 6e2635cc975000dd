// An output constraint as a worker applies it: compiled once per schema and shared by every
// sequence that uses it (with its mask caches), and followed per sequence token by token.
#ifndef ARBOR_GRAMMAR_CONSTRAINT_H_
#define ARBOR_GRAMMAR_CONSTRAINT_H_

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "grammar/json_grammar.h"
#include "grammar/json_matcher.h"
#include "grammar/token_masker.h"
#include "grammar/token_trie.h"

namespace arbor::grammar {

// What the output must be: any JSON object, or a document of a JSON Schema.
struct ConstraintSpec {
  bool json_object = false;
  std::string json_schema;  // When not json_object.
};

// Compiles `spec`'s grammar (INVALID_ARGUMENT naming the keyword, as CompileJsonSchema).
absl::StatusOr<JsonGrammar> CompileConstraint(const ConstraintSpec& spec);

class CompiledConstraint {
 public:
  CompiledConstraint(JsonGrammar grammar, std::shared_ptr<const TokenTrie> trie,
                     int32_t vocab_size);
  const JsonGrammar& grammar() const { return grammar_; }
  const TokenTrie& trie() const { return *trie_; }
  TokenMasker& masker() { return masker_; }

 private:
  JsonGrammar grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  TokenMasker masker_;
};

// Compiled constraints by content, the most recently used kept (a service sees the same few
// schemas again and again, and their mask caches make them cheaper still). A schema is found by
// its text as sent (every Run of a sequence sends it again: no parse), else by its canonical
// form (exact_json.h: the same schema spaced differently shares one compilation).
class ConstraintCache {
 public:
  ConstraintCache(std::shared_ptr<const TokenTrie> trie, int32_t vocab_size, size_t capacity = 16);
  absl::StatusOr<std::shared_ptr<CompiledConstraint>> Get(const ConstraintSpec& spec);

 private:
  struct Entry {
    std::string canonical;
    std::vector<std::string> texts;  // As sent, the latest few.
    std::shared_ptr<CompiledConstraint> compiled;
  };
  std::shared_ptr<const TokenTrie> trie_;
  int32_t vocab_size_;
  size_t capacity_;
  absl::Mutex mu_;
  std::list<Entry> recent_ ABSL_GUARDED_BY(mu_);  // Most recent first.
};

// One sequence's place in its constraint. Masks come from the shared compiled constraint, so a
// sequence's states must be used from one thread at a time with the others of that constraint
// (the worker's engine thread).
class ConstraintState {
 public:
  explicit ConstraintState(std::shared_ptr<CompiledConstraint> constraint);
  // A token of the output joins the sequence; false (state unchanged) when the grammar does not
  // allow it there.
  bool Add(int32_t token);
  // The tokens allowed next (token_masker.h), `end_tokens` only where the document may end.
  void Mask(absl::Span<const int32_t> end_tokens, TokenBits& bits);
  bool Complete() const { return matcher_.Complete(); }

 private:
  std::shared_ptr<CompiledConstraint> constraint_;
  JsonMatcher matcher_;
};

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_CONSTRAINT_H_
