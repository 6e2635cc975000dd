#include "grammar/token_masker.h"

#include <algorithm>
#include <utility>

namespace arbor::grammar {
namespace {

// Cache bounds: each entry is a vocabulary-wide bitset (6 KB for 49,152 tokens, 16 KB for
// 128,256). A full cache is emptied and refilled, which keeps the bound without bookkeeping.
constexpr size_t kMaxFrameParts = 256;
constexpr size_t kMaxStacks = 128;

}  // namespace

TokenMasker::TokenMasker(const JsonGrammar* grammar, const TokenTrie* trie, int32_t vocab_size)
    : grammar_(grammar),
      trie_(trie),
      vocab_size_(vocab_size),
      words_((static_cast<size_t>(vocab_size) + 63) / 64),
      levels_(1, JsonMatcher(grammar)) {
  // The most code points a token reads in a string: one per byte that is no UTF-8 continuation
  // byte, and the one a state may have begun.
  int horizon = 0;
  for (int32_t token = 0; token < trie_->vocab_size(); ++token) {
    const std::string& bytes = trie_->bytes(token);
    max_token_bytes_ = std::max(max_token_bytes_, bytes.size());
    const int starts = static_cast<int>(
        std::count_if(bytes.begin(), bytes.end(), [](char c) { return (c & 0xC0) != 0x80; }));
    horizon = std::max(horizon, starts + 1);
  }
  for (const StringAutomaton& text : grammar_->texts) {
    representatives_.push_back(text.Representatives(horizon));
  }
}

void TokenMasker::Walk(int32_t node, size_t depth, FramePart& part) {
  if (levels_.size() <= depth + 1) levels_.push_back(levels_[depth]);
  for (int32_t child = trie_->first_child(node); child >= 0; child = trie_->next_sibling(child)) {
    JsonMatcher& next = levels_[depth + 1];
    next = levels_[depth];
    switch (next.Feed(trie_->byte(child))) {
      case JsonMatcher::Fed::kRejected:
        break;
      case JsonMatcher::Fed::kLeftFloor:
        for (int32_t token : trie_->TokensUnder(child)) part.leaving.push_back(token);
        break;
      case JsonMatcher::Fed::kAccepted:
        for (int32_t token : trie_->TokensEndingAt(child)) {
          SetBit(part.inside, token);
          if (ends_ == nullptr) continue;
          auto [it, added] = ends_->emplace(next.stack().back(), part.ends.size());
          if (added) part.ends.emplace_back();
          part.ends[it->second].push_back(token);
        }
        Walk(child, depth + 1, part);
        break;
    }
  }
}

const TokenMasker::FramePart& TokenMasker::PartFor(const std::vector<Frame>& stack) {
  // With room for every push a token can make, the frames below change nothing: one entry serves
  // the frame at any depth.
  const bool limit_binds = stack.size() + max_token_bytes_ > kMaxNesting;
  std::pair<Frame, size_t> key(stack.back(), limit_binds ? stack.size() - 1 : 0);
  const Node& node = grammar_->nodes[key.first.node];
  const int32_t text = node.kind == NodeKind::kString ? node.text : -1;
  if (text >= 0) key.first.a = representatives_[text][key.first.a];
  return PartForKey(key, text);
}

const TokenMasker::FramePart& TokenMasker::PartForKey(const std::pair<Frame, size_t>& key,
                                                      int32_t text) {
  auto it = parts_.find(key);
  if (it != parts_.end()) return *it->second;
  std::unique_ptr<FramePart> part;
  const int32_t base = text >= 0 ? grammar_->texts[text].Base(key.first.a) : key.first.a;
  if (base != key.first.a) {
    // The base itself, not its representative: the groups are of where tokens end from it.
    std::pair<Frame, size_t> base_key = key;
    base_key.first.a = base;
    part = FromBase(key, PartForKey(base_key, text));
  } else {
    ++frame_misses_;
    part = std::make_unique<FramePart>();
    part->inside.assign(words_, 0);
    levels_[0] = JsonMatcher(grammar_, key.first);
    levels_[0].set_floor(1);  // Closing the top frame is the boundary of what it decides alone.
    levels_[0].set_frames_below(key.second);
    absl::flat_hash_map<Frame, size_t> ends;
    if (text >= 0) ends_ = &ends;
    Walk(TokenTrie::kRoot, 0, *part);
    ends_ = nullptr;
  }
  if (parts_.size() >= kMaxFrameParts) parts_.clear();
  return *parts_.emplace(key, std::move(part)).first->second;
}

std::unique_ptr<TokenMasker::FramePart> TokenMasker::FromBase(const std::pair<Frame, size_t>& key,
                                                              const FramePart& base) {
  auto part = std::make_unique<FramePart>();
  part->inside.assign(words_, 0);
  part->leaving = base.leaving;
  levels_[0] = JsonMatcher(grammar_, key.first);
  levels_[0].set_floor(1);
  levels_[0].set_frames_below(key.second);
  if (levels_.size() < 2) levels_.push_back(levels_[0]);
  for (const std::vector<int32_t>& group : base.ends) {
    levels_[1] = levels_[0];
    if (!levels_[1].FeedAll(trie_->bytes(group.front()))) continue;
    for (int32_t token : group) SetBit(part->inside, token);
  }
  return part;
}

void TokenMasker::ApplyEnds(const JsonMatcher& matcher, absl::Span<const int32_t> end_tokens,
                            TokenBits& bits) const {
  const bool may_end = matcher.AcceptsEnd();
  for (int32_t token : end_tokens) {
    if (token < 0 || token >= vocab_size_) continue;
    if (may_end) {
      SetBit(bits, token);
    } else {
      ClearBit(bits, token);  // An end token that is also text must not cut the document.
    }
  }
}

void TokenMasker::Mask(const JsonMatcher& matcher, absl::Span<const int32_t> end_tokens,
                       TokenBits& bits) {
  const std::vector<Frame>& stack = matcher.stack();
  auto cached = stacks_.find(stack);
  if (cached == stacks_.end()) {
    ++stack_misses_;
    if (stacks_.size() >= kMaxStacks) stacks_.clear();
    TokenBits computed(words_, 0);
    if (!stack.empty()) {
      const FramePart& part = PartFor(stack);
      computed = part.inside;
      for (int32_t token : part.leaving) {
        JsonMatcher copy = matcher;
        if (copy.FeedAll(trie_->bytes(token))) SetBit(computed, token);
      }
    }
    cached = stacks_.emplace(stack, std::move(computed)).first;
  }
  bits = cached->second;
  ApplyEnds(matcher, end_tokens, bits);
}

void TokenMasker::MaskByEachToken(const JsonMatcher& matcher, absl::Span<const int32_t> end_tokens,
                                  TokenBits& bits) const {
  bits.assign(words_, 0);
  for (int32_t token = 0; token < trie_->vocab_size(); ++token) {
    const std::string& text = trie_->bytes(token);
    JsonMatcher copy = matcher;
    if (!text.empty() && copy.FeedAll(text)) SetBit(bits, token);
  }
  ApplyEnds(matcher, end_tokens, bits);
}

}  // namespace arbor::grammar
