#include "coordinator/service/prompt_snippet.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "model/tokenizer/utf8.h"
#include "views/tree_display.h"

namespace arbor::coordinator {

std::string PromptSnippet(const arbor::v1::GenerateRequest& request) {
  absl::string_view text;
  if (request.has_chat()) {
    for (const arbor::v1::ChatMessage& message : request.chat().messages()) {
      if (message.role() == "user" || text.empty()) text = message.content();
    }
  } else if (request.prompt_case() == arbor::v1::GenerateRequest::kText) {
    text = request.text();
  }
  // Only the start is read: a code point takes at most 4 bytes, so a long prompt's snippet lies
  // in its first few hundred (a cut character becomes U+FFFD, past the width).
  const std::string start = model::ToValidUtf8(text.substr(0, 4 * kPromptSnippetWidth + 4));
  const std::string line =
      absl::StrJoin(absl::StrSplit(start, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty()), " ");
  return views::TruncateToWidth(line, kPromptSnippetWidth);
}

}  // namespace arbor::coordinator
