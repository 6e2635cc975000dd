#include "grammar/constraint.h"

#include <utility>

namespace arbor::grammar {

absl::StatusOr<JsonGrammar> CompileConstraint(const ConstraintSpec& spec) {
  if (spec.json_object) return AnyJsonObjectGrammar();
  return CompileJsonSchema(spec.json_schema);
}

CompiledConstraint::CompiledConstraint(JsonGrammar grammar, std::shared_ptr<const TokenTrie> trie,
                                       int32_t vocab_size)
    : grammar_(std::move(grammar)),
      trie_(std::move(trie)),
      masker_(&grammar_, trie_.get(), vocab_size) {}

ConstraintCache::ConstraintCache(std::shared_ptr<const TokenTrie> trie, int32_t vocab_size,
                                 size_t capacity)
    : trie_(std::move(trie)), vocab_size_(vocab_size), capacity_(capacity) {}

absl::StatusOr<std::shared_ptr<CompiledConstraint>> ConstraintCache::Get(
    const ConstraintSpec& spec) {
  const std::string key = spec.json_object ? std::string("object") : "schema:" + spec.json_schema;
  absl::MutexLock lock(&mu_);
  for (auto it = recent_.begin(); it != recent_.end(); ++it) {
    if (it->first == key) {
      recent_.splice(recent_.begin(), recent_, it);
      return recent_.front().second;
    }
  }
  absl::StatusOr<JsonGrammar> grammar = CompileConstraint(spec);
  if (!grammar.ok()) return grammar.status();
  recent_.emplace_front(
      key, std::make_shared<CompiledConstraint>(*std::move(grammar), trie_, vocab_size_));
  if (recent_.size() > capacity_) recent_.pop_back();
  return recent_.front().second;
}

ConstraintState::ConstraintState(std::shared_ptr<CompiledConstraint> constraint)
    : constraint_(std::move(constraint)), matcher_(&constraint_->grammar()) {}

bool ConstraintState::Add(int32_t token) {
  if (token < 0 || token >= constraint_->trie().vocab_size()) return false;
  const std::string& text = constraint_->trie().bytes(token);
  if (text.empty()) return false;
  JsonMatcher next = matcher_;
  if (!next.FeedAll(text)) return false;
  matcher_ = std::move(next);
  return true;
}

void ConstraintState::Mask(absl::Span<const int32_t> end_tokens, TokenBits& bits) {
  constraint_->masker().Mask(matcher_, end_tokens, bits);
}

}  // namespace arbor::grammar
