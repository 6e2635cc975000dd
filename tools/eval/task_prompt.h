// The prompt of a task as the Generation API takes it: raw text, or chat messages with an
// assistant turn opened for the answer.
#ifndef ARBOR_TOOLS_EVAL_TASK_PROMPT_H_
#define ARBOR_TOOLS_EVAL_TASK_PROMPT_H_

#include "arbor/v1/generation.pb.h"
#include "tools/eval/task_file.h"

namespace arbor::tools::eval {

void SetPrompt(const Task& task, arbor::v1::GenerateRequest& request);
void SetPrompt(const Task& task, arbor::v1::ScoreRequest& request);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_TASK_PROMPT_H_
