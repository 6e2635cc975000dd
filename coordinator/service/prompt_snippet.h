// What job lists show of a job's prompt (Job.prompt_snippet): a line a reader recognises the job
// by, cut to a fixed width.
#ifndef ARBOR_COORDINATOR_SERVICE_PROMPT_SNIPPET_H_
#define ARBOR_COORDINATOR_SERVICE_PROMPT_SNIPPET_H_

#include <string>

#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator {

// Columns of a snippet, the "…" of a cut one included.
inline constexpr int kPromptSnippetWidth = 100;

// A text prompt's start, or a chat's last user message (the question asked: the system message
// is the same for most jobs), with each run of whitespace as one space, cut at a character to
// kPromptSnippetWidth columns. Empty for a token prompt, which has no text to show.
std::string PromptSnippet(const arbor::v1::GenerateRequest& request);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_PROMPT_SNIPPET_H_
