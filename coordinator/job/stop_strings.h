// A job's committed text as it is streamed (docs/ARCHITECTURE.md §4.4). Two concerns meet here:
//  - decoding is incremental: each committed token decodes a short window of tokens (from the
//    last point where text was released), never the whole text again, and bytes of a character
//    that a token leaves unfinished are held back by the decoder until it completes;
//  - stop strings are matched on text, not tokens, and can span several tokens, so the streamed
//    text never contains a prefix of a possible match: the longest suffix of the text that is a
//    prefix of some stop string is held back until it can no longer match (or the job ends);
//  - a structured answer (an output constraint) may only be cut where it is a whole document:
//    a stop string counts only where the text before it is one, so an answer that ends on a
//    stop string still parses.
#ifndef ARBOR_COORDINATOR_JOB_STOP_STRINGS_H_
#define ARBOR_COORDINATOR_JOB_STOP_STRINGS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "arbor/v1/entropix.pb.h"
#include "grammar/json_grammar.h"
#include "grammar/json_matcher.h"

namespace arbor::coordinator {

class StopStringMatcher {
 public:
  // Empty strings are ignored (validation refuses them anyway).
  explicit StopStringMatcher(std::vector<std::string> stop_strings);

  bool empty() const { return stop_strings_.empty(); }

  // The byte offset where the earliest match in `text` starts, or nullopt; only matches ending
  // after `new_from` are looked for (those before were checked already). Earliest so that the
  // reported text never contains any stop string, whichever one completed first.
  std::optional<size_t> FirstMatch(const std::string& text, size_t new_from = 0) const;
  // The byte offset where the earliest match starting at or after `start` starts, or nullopt.
  std::optional<size_t> NextMatch(const std::string& text, size_t start) const;
  // Where a match ending after `new_from` may start, at the earliest.
  size_t SearchStart(size_t new_from) const;

  // Length of the longest suffix of `text` that is a proper prefix of some stop string: the
  // bytes that may still become a match.
  size_t PossibleMatchLength(const std::string& text) const;

 private:
  std::vector<std::string> stop_strings_;
  size_t longest_ = 0;
};

// Where a constrained text may end: whether a prefix of it is a whole document of the grammar
// (the root value complete, or a number or literal that may end there). One matcher follows the
// text up to a settled point, before which no end is asked about any more, so each question
// costs the bytes after that point rather than the whole text.
class DocumentEnds {
 public:
  explicit DocumentEnds(grammar::JsonGrammar grammar);
  DocumentEnds(const DocumentEnds&) = delete;  // The matcher points at grammar_.
  DocumentEnds& operator=(const DocumentEnds&) = delete;

  // No later question asks about an end before `settled` (<= text.size()).
  void Settle(const std::string& text, size_t settled);
  // The text was cut to `size` bytes (BACKSPACE): what the matcher read beyond it is forgotten.
  void Truncate(size_t size);
  // Whether text[0, end) is a whole document; `end` is at or after the settled point.
  bool EndsAt(const std::string& text, size_t end) const;

 private:
  const grammar::JsonGrammar grammar_;
  grammar::JsonMatcher matcher_;
  size_t fed_ = 0;         // Bytes of the text the matcher has read.
  bool rejected_ = false;  // The grammar refused one of them: no later prefix is a document.
};

// The committed text of one job, pushed a token at a time.
class StreamedText {
 public:
  // Text of a token window; must not end inside a character (hold incomplete bytes back).
  using Decode = std::function<std::string(absl::Span<const int32_t>)>;

  // With a `constraint` (set, and compiling as a checked request's does), stop strings count
  // only where the text before them is a whole document of it.
  StreamedText(Decode decode, std::vector<std::string> stop_strings,
               const arbor::v1::OutputConstraint& constraint = {});

  struct Piece {
    std::string text;      // Newly streamable text (possibly empty while holding back).
    bool stopped = false;  // A stop string matched: the text is cut before it; push no more.
  };
  // Adds a committed token. With `last` (the job ends on it), the text held back for a possible
  // stop string is released too.
  Piece Push(int32_t token, bool last);
  // Ends the text without another token (the job ends on a stop token, whose text is not part
  // of the answer): releases what was held back for a possible stop string.
  Piece Finish();
  // Removes the last pushed token (BACKSPACE): text and streamed text return to what they were
  // before it was pushed, so a client drops exactly the piece streamed with that token.
  void Pop();

  // Everything decoded so far, cut before a stop string.
  const std::string& text() const { return text_; }

 private:
  // State before each push, for Pop().
  struct Mark {
    size_t prefix = 0;
    size_t read = 0;
    size_t text_size = 0;
    size_t streamed = 0;
  };

  // Where the first stop string that counts starts, among those ending after `new_from`.
  std::optional<size_t> FirstStop(size_t new_from);

  const Decode decode_;
  const StopStringMatcher stop_strings_;
  // Null without a constraint, or without stop strings (then nothing asks).
  std::unique_ptr<DocumentEnds> document_ends_;
  std::vector<int32_t> tokens_;
  std::vector<Mark> marks_;
  // The decode window: tokens [prefix_, read_) were decoded when text was last released; the
  // next decode covers [prefix_, end), so the text they held back is recovered.
  size_t prefix_ = 0;
  size_t read_ = 0;
  std::string text_;
  size_t streamed_ = 0;  // Bytes of text_ released to the client.
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_STOP_STRINGS_H_
