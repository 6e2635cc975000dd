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
  reach_.resize(trie_->vocab_size());
  for (int32_t token = 0; token < trie_->vocab_size(); ++token) {
    const std::string& bytes = trie_->bytes(token);
    max_token_bytes_ = std::max(max_token_bytes_, bytes.size());
    const int starts = static_cast<int>(
        std::count_if(bytes.begin(), bytes.end(), [](char c) { return (c & 0xC0) != 0x80; }));
    reach_[token] = starts + 1;
    horizon = std::max(horizon, starts + 1);
  }
  for (const StringAutomaton& text : grammar_->texts) {
    representatives_.push_back(text.Representatives(horizon));
    nearest_.push_back(text.Nearest(representatives_.back(), horizon));
  }
  if (grammar_->texts.empty()) return;
  // Children follow their parent in pre-order, so a backward pass sees them first.
  reach_below_.assign(trie_->num_nodes(), 0);
  for (int32_t node = trie_->num_nodes() - 1; node >= 0; --node) {
    int reach = 0;
    for (int32_t token : trie_->TokensEndingAt(node)) reach = std::max(reach, reach_[token]);
    for (int32_t c = trie_->first_child(node); c >= 0; c = trie_->next_sibling(c)) {
      reach = std::max(reach, reach_below_[c]);
    }
    reach_below_[node] = reach;
  }
}

void TokenMasker::Walk(int32_t node, size_t depth, FramePart& part) {
  if (levels_.size() <= depth + 1) levels_.push_back(levels_[depth]);
  for (int32_t child = trie_->first_child(node); child >= 0; child = trie_->next_sibling(child)) {
    if (long_only_ > 0 && reach_below_[child] <= long_only_) continue;
    JsonMatcher& next = levels_[depth + 1];
    next = levels_[depth];
    switch (next.Feed(trie_->byte(child))) {
      case JsonMatcher::Fed::kRejected:
        break;
      case JsonMatcher::Fed::kLeftFloor:
        for (int32_t token : trie_->TokensUnder(child)) {
          if (reach_[token] > long_only_) part.leaving.push_back(token);
        }
        break;
      case JsonMatcher::Fed::kAccepted:
        for (int32_t token : trie_->TokensEndingAt(child)) {
          if (reach_[token] <= long_only_) continue;
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
  } else if (text >= 0 && nearest_[text][key.first.a].first >= 0) {
    part = FromNearest(key, text);
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

std::unique_ptr<TokenMasker::FramePart> TokenMasker::FromNearest(
    const std::pair<Frame, size_t>& key, int32_t text) {
  const auto [nearest, k] = nearest_[text][key.first.a];
  std::pair<Frame, size_t> nearest_key = key;
  nearest_key.first.a = nearest;
  const FramePart& near = PartForKey(nearest_key, text);
  auto part = std::make_unique<FramePart>();
  part->inside.assign(words_, 0);
  for (int32_t token = 0; token < trie_->vocab_size(); ++token) {
    if (reach_[token] <= k && TestBit(near.inside, token)) SetBit(part->inside, token);
  }
  for (int32_t token : near.leaving) {
    if (reach_[token] <= k) part->leaving.push_back(token);
  }
  ++frame_misses_;
  levels_[0] = JsonMatcher(grammar_, key.first);
  levels_[0].set_floor(1);
  levels_[0].set_frames_below(key.second);
  long_only_ = k;
  Walk(TokenTrie::kRoot, 0, *part);
  long_only_ = 0;
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
