#include "views/committed_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace arbor::views {

void CommittedStream::Release(FinalPiece& piece) {
  if (!held_) return;
  piece.text += held_->token.piece;
  piece.tokens.push_back(std::move(held_->token));
  held_.reset();
}

absl::StatusOr<FinalPiece> CommittedStream::Push(const arbor::v1::GenerateEvent& event) {
  if (job_id_.empty()) job_id_ = event.job_id();
  FinalPiece piece;
  switch (event.event_case()) {
    case arbor::v1::GenerateEvent::kToken: {
      Release(piece);
      const arbor::v1::TokenEvent& t = event.token();
      held_ = Held{t.node_id(), FinalToken{t.token_id(),
                                           t.token_text(),
                                           t.text(),
                                           t.logprob(),
                                           t.strategy(),
                                           {t.top_logprobs().begin(), t.top_logprobs().end()}}};
      if (t.final()) Release(piece);  // Nothing can retract it: no need to wait.
      break;
    }
    case arbor::v1::GenerateEvent::kInsert: {
      Release(piece);
      const arbor::v1::InsertEvent& insert = event.insert();
      piece.text += insert.text();
      for (int i = 0; i < insert.token_ids_size(); ++i) {
        FinalToken& token = piece.tokens.emplace_back();
        token.id = insert.token_ids(i);
        token.text = i == 0 ? insert.text() : "";  // The insert's text is not split by token.
        token.piece = token.text;
        token.logprob = i < insert.logprobs_size() ? insert.logprobs(i) : 0;
        token.strategy = arbor::v1::STRATEGY_INSERT;
      }
      break;
    }
    case arbor::v1::GenerateEvent::kBackspace:
      if (!held_ || held_->node_id != event.backspace().removed_node_id()) {
        return absl::InternalError(absl::StrCat("job ", job_id_, ": backspace of node ",
                                                event.backspace().removed_node_id(),
                                                ", which is not the latest committed token"));
      }
      piece.retracted = std::move(held_->token);
      held_.reset();
      break;
    case arbor::v1::GenerateEvent::kFinished:
      Release(piece);
      finished_ = event.finished();
      break;
    case arbor::v1::GenerateEvent::kReasoning:
      piece.reasoning = ReasoningText(event.reasoning());
      break;
    default:  // Branch and re-home events change nothing committed.
      break;
  }
  return piece;
}

std::string CommittedStream::ReasoningText(const arbor::v1::ReasoningEvent& reasoning) {
  if (reasoning.trace() == reasoning_trace_) return reasoning.text();
  // Traces come whole, one after another: a new one opens with a line of its own.
  std::string text = reasoning_trace_ < 0 ? "" : "\n\n";
  reasoning_trace_ = reasoning.trace();
  absl::StrAppend(&text, "Trace ", reasoning.trace() + 1);
  if (reasoning.parent_trace() >= 0) {
    absl::StrAppend(&text, " (from trace ", reasoning.parent_trace() + 1, ")");
  }
  absl::StrAppend(&text, ":\n", reasoning.text());
  return text;
}

}  // namespace arbor::views
