#include "coordinator/job/stop_strings.h"

#include <algorithm>
#include <utility>

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
  // A match ending after new_from starts after new_from - longest.
  const size_t start = new_from > longest_ ? new_from - longest_ : 0;
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

StreamedText::StreamedText(Decode decode, std::vector<std::string> stop_strings)
    : decode_(std::move(decode)), stop_strings_(std::move(stop_strings)) {}

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
    if (std::optional<size_t> at = stop_strings_.FirstMatch(text_, old_size)) {
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
  streamed_ = mark.streamed;
}

}  // namespace arbor::coordinator
