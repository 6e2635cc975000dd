// An answer-extraction regex (PCRE2 syntax), applied to model output with bounded work: a task
// file's, or a TRACE request's (policy.trace.answer_pattern). The patterns come from whoever
// wrote the task file or request and the subjects from a model, so a
// pathological pattern (nested quantifiers) must cost a bounded amount per output, never hang an
// evaluation: PCRE2's match limits stop it, and the extraction then reports no answer.
#ifndef ARBOR_BASE_ANSWER_PATTERN_H_
#define ARBOR_BASE_ANSWER_PATTERN_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arbor::base {

class AnswerPattern {
 public:
  // INVALID_ARGUMENT with PCRE2's message and offset for a pattern that does not compile.
  static absl::StatusOr<std::shared_ptr<const AnswerPattern>> Compile(absl::string_view pattern);
  ~AnswerPattern();
  AnswerPattern(const AnswerPattern&) = delete;
  AnswerPattern& operator=(const AnswerPattern&) = delete;

  // The last match in `subject` (its group 1 when the pattern has one and it took part);
  // nullopt when nothing matches or the match limits were hit. Invalid UTF-8 in `subject` is
  // matched around, not an error.
  std::optional<std::string> LastMatch(absl::string_view subject) const;
  // The same match as byte offsets [begin, end) into `subject`.
  std::optional<std::pair<size_t, size_t>> LastMatchSpan(absl::string_view subject) const;

 private:
  struct Code;
  explicit AnswerPattern(Code* code) : code_(code) {}
  Code* code_;
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_ANSWER_PATTERN_H_
