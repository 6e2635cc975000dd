// Compiled constraints, their cache and a sequence's place in one (constraint.h).
#include "grammar/constraint.h"

#include <algorithm>
#include <utility>

#include "grammar/exact_json.h"
#include "nlohmann/json.hpp"

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

namespace {

constexpr size_t kTextsPerEntry = 4;

// The key of a spec's content; the spec's own text when it does not parse (compiling it then
// reports why).
std::string Canonical(const ConstraintSpec& spec) {
  if (spec.json_object) return "object";
  absl::StatusOr<nlohmann::ordered_json> parsed = ParseExactJson(spec.json_schema, kMaxSchemaDepth);
  return parsed.ok() ? "schema:" + DumpExactJson(*parsed) : "text:" + spec.json_schema;
}

}  // namespace

absl::StatusOr<std::shared_ptr<CompiledConstraint>> ConstraintCache::Get(
    const ConstraintSpec& spec) {
  const std::string text = spec.json_object ? std::string("object") : "schema:" + spec.json_schema;
  absl::MutexLock lock(&mu_);
  auto found = std::find_if(recent_.begin(), recent_.end(), [&](const Entry& entry) {
    return std::find(entry.texts.begin(), entry.texts.end(), text) != entry.texts.end();
  });
  if (found == recent_.end()) {
    std::string canonical = Canonical(spec);
    found = std::find_if(recent_.begin(), recent_.end(),
                         [&](const Entry& entry) { return entry.canonical == canonical; });
    if (found == recent_.end()) {
      absl::StatusOr<JsonGrammar> grammar = CompileConstraint(spec);
      if (!grammar.ok()) return grammar.status();
      recent_.push_front(Entry{
          .canonical = std::move(canonical),
          .texts = {},
          .compiled = std::make_shared<CompiledConstraint>(*std::move(grammar), trie_, vocab_size_)});
      if (recent_.size() > capacity_) recent_.pop_back();
      found = recent_.begin();
    }
    if (found->texts.size() >= kTextsPerEntry) found->texts.erase(found->texts.begin());
    found->texts.push_back(text);
  }
  recent_.splice(recent_.begin(), recent_, found);
  return recent_.front().compiled;
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
