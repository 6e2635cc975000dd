// Evaluation tasks as `arbor eval` reads them: JSON Lines files in Arbor's task format
// (tools/eval/tasks/README.md) or in GSM8K's (question / answer ending "#### N"), and the
// checking of a model's output against an item's reference answer. Free of protobuf, so the
// parser builds into its fuzz target alone (task_prompt.h makes requests of tasks).
#ifndef ARBOR_TOOLS_EVAL_TASK_FILE_H_
#define ARBOR_TOOLS_EVAL_TASK_FILE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/answer_pattern.h"

namespace arbor::tools::eval {

using ::arbor::base::AnswerPattern;

enum class MatchKind { kNumber, kExact, kIcase };

struct TaskMessage {
  std::string role;
  std::string content;
};

struct Task {
  std::string id;
  std::string family = "default";  // Reported per family.
  int level = 0;
  // Exactly one of: a raw text prompt, or chat messages (answered in a new assistant turn).
  std::string text;
  std::vector<TaskMessage> messages;
  std::string answer;
  MatchKind match = MatchKind::kExact;
  // Applied to the output, last match wins (group 1 when the pattern has one); none: the
  // match kind's default (last number / first non-empty line).
  std::shared_ptr<const AnswerPattern> extract;
  std::string extract_source;        // The pattern `extract` was compiled from.
  std::vector<std::string> choices;  // Non-empty: multiple choice by log-likelihood.
  int max_tokens = 0;                // 0: the run's default.
};

// One task from one JSON line; `where` (e.g. "tasks.jsonl:12") starts every error message.
absl::StatusOr<Task> ParseTask(const std::string& line, const std::string& where);

// Every task of the files, in order; blank lines are skipped. INVALID_ARGUMENT naming
// file:line and field for a malformed line or a duplicated id, NOT_FOUND for a missing file.
absl::StatusOr<std::vector<Task>> ReadTasks(const std::vector<std::string>& paths);

// The extraction as one regex (the task's, the number pattern, or the first non-empty line),
// for a server that picks answers itself (TRACE mode's policy.trace.answer_pattern).
std::string AnswerPatternSource(const Task& task);

// The answer the task's extraction finds in `output` (empty when none).
std::string ExtractAnswer(const Task& task, const std::string& output);
// Whether an extracted answer matches the reference under the task's match kind.
bool AnswerMatches(const Task& task, const std::string& extracted);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_TASK_FILE_H_
