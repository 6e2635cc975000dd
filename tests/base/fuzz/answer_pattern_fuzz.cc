// libFuzzer target: arbitrary bytes as a TRACE request's answer pattern and a model's output
// (split at the first NUL; the pattern is capped at the request limit). Compiling must return a
// status, and a match must be a span inside the output that LastMatch agrees with — whatever
// the pattern, however it backtracks (the match limits bound the work).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/answer_pattern.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string pattern = input.substr(0, std::min<size_t>(split, 1024));
  const std::string subject = split == std::string::npos ? "" : input.substr(split + 1);
  absl::StatusOr<std::shared_ptr<const arbor::base::AnswerPattern>> compiled =
      arbor::base::AnswerPattern::Compile(pattern);
  if (!compiled.ok()) return 0;
  const auto span = (*compiled)->LastMatchSpan(subject);
  const auto text = (*compiled)->LastMatch(subject);
  if (span.has_value() != text.has_value()) abort();
  if (!span) return 0;
  if (span->first > span->second || span->second > subject.size()) abort();
  if (subject.substr(span->first, span->second - span->first) != *text) abort();
  return 0;
}
