// libFuzzer target: arbitrary bytes as one task line, then extraction and matching on the same
// bytes as a model output. Parsing must return a status; an accepted task must be well-formed
// (an id or a GSM8K line, exactly one prompt kind, its answer among its choices), and extraction
// must return a substring of the output or of nothing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tools/eval/task_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<arbor::tools::eval::Task> task = arbor::tools::eval::ParseTask(text, "fuzz:1");
  if (!task.ok()) return 0;
  if (task->text.empty() == task->messages.empty()) abort();
  if (!task->choices.empty() &&
      std::count(task->choices.begin(), task->choices.end(), task->answer) != 1) {
    abort();
  }
  const std::string extracted = arbor::tools::eval::ExtractAnswer(*task, text);
  if (!extracted.empty() && text.find(extracted) == std::string::npos) abort();
  arbor::tools::eval::AnswerMatches(*task, extracted);
  return 0;
}
