#include "tools/eval/task_prompt.h"

namespace arbor::tools::eval {

void SetPrompt(const Task& task, arbor::v1::GenerateRequest& request) {
  if (task.messages.empty()) {
    request.set_text(task.text);
    return;
  }
  arbor::v1::ChatPrompt* chat = request.mutable_chat();
  for (const TaskMessage& message : task.messages) {
    arbor::v1::ChatMessage* added = chat->add_messages();
    added->set_role(message.role);
    added->set_content(message.content);
  }
  chat->set_add_generation_prompt(true);
}

void SetPrompt(const Task& task, arbor::v1::ScoreRequest& request) {
  arbor::v1::GenerateRequest generate;
  SetPrompt(task, generate);
  if (generate.has_chat()) {
    *request.mutable_chat() = generate.chat();
  } else {
    request.set_text(generate.text());
  }
}

}  // namespace arbor::tools::eval
