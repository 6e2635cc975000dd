#include "coordinator/job/stop_strings.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policy/constraint_convert.h"

namespace arbor::coordinator {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings) {
  for (std::string& s : stop_strings) {
    if (s.empty()) continue;
    longest_ = std::max(longest_, s.size());
    stop_strings_.push_back(std::move(s));
  }
}

std::optional<size_t> StopStringMatcher::FirstMatch(const std::string& text,
                                                    size_t new_from) const {
  return NextMatch(text, SearchStart(new_from));
}

size_t StopStringMatcher::SearchStart(size_t new_from) const {
  // A match ending after new_from starts after new_from - longest.
  return new_from > longest_ ? new_from - longest_ : 0;
}

std::optional<size_t> StopStringMatcher::NextMatch(const std::string& text, size_t start) const {
  std::optional<size_t> first;
  for (const std::string& s : stop_strings_) {
    const size_t at = text.find(s, start);
    if (at != std::string::npos && (!first || at < *first)) first = at;
  }
  return first;
}

size_t StopStringMatcher::PossibleMatchLength(const std::string& text) const {
  const size_t most = std::min(text.size(), longest_ == 0 ? 0 : longest_ - 1);
  for (size_t n = most; n > 0; --n) {
    const size_t from = text.size() - n;
    for (const std::string& s : stop_strings_) {
      if (s.size() > n && text.compare(from, n, s, 0, n) == 0) return n;
    }
  }
  return 0;
}

DocumentEnds::DocumentEnds(grammar::JsonGrammar grammar)
    : grammar_(std::move(grammar)), matcher_(&grammar_) {}

void DocumentEnds::Settle(const std::string& text, size_t settled) {
  for (; fed_ < settled && !rejected_; ++fed_) {
    rejected_ =
        matcher_.Feed(static_cast<uint8_t>(text[fed_])) != grammar::JsonMatcher::Fed::kAccepted;
  }
}

void DocumentEnds::Truncate(size_t size) {
  if (fed_ <= size) return;
  // The matcher cannot step back: it reads the kept text again from the start when next settled.
  matcher_ = grammar::JsonMatcher(&grammar_);
  fed_ = 0;
  rejected_ = false;
}

bool DocumentEnds::EndsAt(const std::string& text, size_t end) const {
  if (rejected_ || end < fed_) return false;
  grammar::JsonMatcher at = matcher_;  // A few frames: the stack of open values.
  return at.FeedAll(absl::string_view(text).substr(fed_, end - fed_)) && at.AcceptsEnd();
}

StreamedText::StreamedText(Decode decode, std::vector<std::string> stop_strings,
                           const arbor::v1::OutputConstraint& constraint)
    : decode_(std::move(decode)), stop_strings_(std::move(stop_strings)) {
  if (stop_strings_.empty() ||
      constraint.kind_case() == arbor::v1::OutputConstraint::KIND_NOT_SET) {
    return;
  }
  // The spec's constraint compiled when the request was checked (job_spec.h), so it does here.
  absl::StatusOr<grammar::JsonGrammar> grammar =
      policy::CompileConstraintProto(constraint, "constraint");
  if (grammar.ok()) document_ends_ = std::make_unique<DocumentEnds>(*std::move(grammar));
}

std::optional<size_t> StreamedText::FirstStop(size_t new_from) {
  // A match found before (ending at or before new_from) was refused then, and the text before
  // it has not changed since: it is refused again.
  size_t start = stop_strings_.SearchStart(new_from);
  if (document_ends_ != nullptr) document_ends_->Settle(text_, start);
  for (std::optional<size_t> at; (at = stop_strings_.NextMatch(text_, start)); start = *at + 1) {
    if (document_ends_ == nullptr || document_ends_->EndsAt(text_, *at)) return at;
  }
  return std::nullopt;
}

StreamedText::Piece StreamedText::Push(int32_t token, bool last) {
  marks_.push_back({prefix_, read_, text_.size(), streamed_});
  tokens_.push_back(token);
  const absl::Span<const int32_t> all(tokens_);
  // Both windows start at prefix_, so whatever the decoder does at a window's start (a leading
  // space dropped, bytes held back) cancels out in the difference.
  const std::string before = decode_(all.subspan(prefix_, read_ - prefix_));
  const std::string now = decode_(all.subspan(prefix_));
  const size_t old_size = text_.size();
  if (now.size() > before.size() && now.compare(0, before.size(), before) == 0) {
    text_.append(now, before.size(), std::string::npos);
    prefix_ = read_;
    read_ = tokens_.size();
  }
  Piece piece;
  size_t end = text_.size();
  if (!stop_strings_.empty()) {
    if (std::optional<size_t> at = FirstStop(old_size)) {
      text_.resize(*at);
      end = *at;
      piece.stopped = true;
    } else if (!last) {
      end -= stop_strings_.PossibleMatchLength(text_);
    }
  }
  if (end > streamed_) {
    piece.text = text_.substr(streamed_, end - streamed_);
    streamed_ = end;
  }
  return piece;
}

StreamedText::Piece StreamedText::Finish() {
  Piece piece;
  if (text_.size() > streamed_) {
    piece.text = text_.substr(streamed_);
    streamed_ = text_.size();
  }
  return piece;
}

void StreamedText::Pop() {
  if (tokens_.empty()) return;
  const Mark mark = marks_.back();
  marks_.pop_back();
  tokens_.pop_back();
  prefix_ = mark.prefix;
  read_ = mark.read;
  text_.resize(mark.text_size);
  if (document_ends_ != nullptr) document_ends_->Truncate(text_.size());
  streamed_ = mark.streamed;
}

}  // namespace arbor::coordinator
