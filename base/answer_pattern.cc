#include "base/answer_pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "absl/strings/str_cat.h"

namespace arbor::base {
namespace {

// Backtracking steps and recursion depth per match attempt: far above what any sensible
// extraction needs on a few hundred tokens of output, and a few milliseconds at worst.
constexpr uint32_t kMatchLimit = 1'000'000;
constexpr uint32_t kDepthLimit = 10'000;

}  // namespace

struct AnswerPattern::Code {
  pcre2_code* code = nullptr;
  uint32_t captures = 0;
};

absl::StatusOr<std::shared_ptr<const AnswerPattern>> AnswerPattern::Compile(
    absl::string_view pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return absl::InvalidArgumentError(absl::StrCat(
        "not a valid regex: ", reinterpret_cast<const char*>(message), " at offset ", offset));
  }
  auto* compiled = new Code{code, 0};
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &compiled->captures);
  return std::shared_ptr<const AnswerPattern>(new AnswerPattern(compiled));
}

AnswerPattern::~AnswerPattern() {
  pcre2_code_free(code_->code);
  delete code_;
}

std::optional<std::string> AnswerPattern::LastMatch(absl::string_view subject) const {
  const std::optional<std::pair<size_t, size_t>> span = LastMatchSpan(subject);
  if (!span) return std::nullopt;
  return std::string(subject.substr(span->first, span->second - span->first));
}

std::optional<std::pair<size_t, size_t>> AnswerPattern::LastMatchSpan(
    absl::string_view subject) const {
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(context, kMatchLimit);
  pcre2_set_depth_limit(context, kDepthLimit);
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.data());
  std::optional<std::pair<size_t, size_t>> last;
  PCRE2_SIZE start = 0;
  while (start <= subject.size()) {
    const int rc = pcre2_match(code_->code, text, subject.size(), start, 0, data, context);
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT) {
      last.reset();  // Part of the output was never searched: no answer is safer than a wrong one.
      break;
    }
    if (rc < 0) break;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const int group = code_->captures >= 1 && rc > 1 && ovector[2] != PCRE2_UNSET ? 1 : 0;
    last.emplace(ovector[2 * group], ovector[2 * group + 1]);
    // Past the match; one further when it was empty, so the scan always advances.
    start = ovector[1] > ovector[0] ? ovector[1] : ovector[1] + 1;
  }
  pcre2_match_data_free(data);
  pcre2_match_context_free(context);
  return last;
}

}  // namespace arbor::base
