#include "tools/stream_printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "views/tree_display.h"

namespace arbor::tools {
namespace {

using arbor::v1::GenerateEvent;

// Columns of the token cell: a token or two, quoted; longer ones end in an ellipsis.
constexpr int kTokenWidth = 24;

std::string MetricsLine(const arbor::v1::Metrics& m) {
  return absl::StrFormat("H=%.3f V=%.3f aH=%.3f aV=%.3f agr=%.3f IS=%.3f", m.entropy(),
                         m.varentropy(), m.attn_entropy(), m.attn_varentropy(), m.agreement(),
                         m.interaction_strength());
}

std::string Summary(const GenerateEvent& event) {
  const arbor::v1::FinishedEvent& f = event.finished();
  const arbor::v1::StrategyCounts& s = f.strategies();
  std::string line = absl::StrFormat(
      "job %s finished: %s; tokens: %d prompt (%d cached), %d generated, %d explored; "
      "time: %.3f s total, %.3f s to first token\nstrategies: argmax %d, adaptive %d, branch %d, "
      "insert %d, backspace %d, hot_sample %d, resample %d, branch_sample %d",
      event.job_id(), arbor::v1::FinishReason_Name(f.reason()), f.usage().prompt_tokens(),
      f.usage().cached_prompt_tokens(), f.usage().generated_tokens(), f.usage().explored_tokens(),
      f.timings().total_us() / 1e6, f.timings().first_token_us() / 1e6, s.argmax(), s.adaptive(),
      s.branch(), s.insert(), s.backspace(), s.hot_sample(), s.resample(), s.branch_sample());
  if (!f.error().empty()) absl::StrAppend(&line, "\nerror: ", f.error());
  return line;
}

std::string Rehomed(const arbor::v1::Rehomed& r) {
  return absl::StrCat("job moved from ", r.from_worker(), " to ", r.to_worker(), ": ", r.reason());
}

}  // namespace

std::string StreamPrinter::Colored(arbor::v1::Strategy strategy, const std::string& text) const {
  const std::string sgr = views::StrategyAnsiColor(strategy);
  if (!client_.color || sgr == "0" || text.empty()) return text;
  return absl::StrCat("\x1b[", sgr, "m", text, "\x1b[0m");
}

void StreamPrinter::Row(const std::string& position, const std::string& kind,
                        arbor::v1::Strategy color, const std::optional<std::string>& token,
                        const std::string& details) {
  // Padded before colouring: escape codes take no columns but would count as characters.
  const std::string cell =
      token ? views::TokenCell(*token, kTokenWidth) : std::string(kTokenWidth, ' ');
  out_ << absl::StrFormat("%5s ", position) << Colored(color, absl::StrFormat("%-14s", kind)) << " "
       << cell << " " << details << "\n";
}

absl::Status StreamPrinter::Print(const GenerateEvent& event) {
  if (client_.json) {
    out_ << ToJson(event) << "\n";
    out_.flush();
    return absl::OkStatus();
  }
  absl::StatusOr<views::FinalPiece> piece = stream_.Push(event);
  if (!piece.ok()) return piece.status();
  if (show_metrics_) {
    PrintMetricsRow(event, *piece);
  } else {
    PrintReasoning(piece->reasoning, !piece->tokens.empty());
    for (const views::FinalToken& token : piece->tokens) {
      out_ << Colored(token.strategy, views::FlowTokenText(token.piece));
    }
    if (event.has_rehomed()) err_ << "\n      [" << Rehomed(event.rehomed()) << "]\n";
  }
  if (event.has_finished()) {
    out_ << "\n";
    out_.flush();
    err_ << Summary(event) << "\n";
  }
  out_.flush();
  return absl::OkStatus();
}

void StreamPrinter::PrintReasoning(const std::string& reasoning, bool answer_follows) {
  if (!reasoning.empty()) {
    const std::string text = views::FlowTokenText(reasoning);
    err_ << (client_.color ? absl::StrCat("\x1b[2m", text, "\x1b[0m") : text);
    err_.flush();
    reasoning_open_ = true;
  }
  if (answer_follows && reasoning_open_) {
    err_ << "\n\n";  // The answer starts on a line of its own.
    err_.flush();
    reasoning_open_ = false;
  }
}

void StreamPrinter::PrintMetricsRow(const GenerateEvent& event, const views::FinalPiece& piece) {
  for (const views::FinalToken& token : piece.tokens) {
    committed_ += Colored(token.strategy, views::FlowTokenText(token.piece));
  }
  if (!header_printed_) {
    header_printed_ = true;
    out_ << absl::StrFormat("%5s %-14s %-*s %s\n", "pos", "strategy", kTokenWidth, "token",
                            "logprob and step metrics / event");
  }
  const std::string next = next_position_ >= 0 ? absl::StrCat(next_position_) : "";
  switch (event.event_case()) {
    case GenerateEvent::kToken: {
      const arbor::v1::TokenEvent& t = event.token();
      next_position_ = t.position() + 1;
      Row(absl::StrCat(t.position()), views::StrategyName(t.strategy()), t.strategy(), t.text(),
          absl::StrFormat("lp=%7.3f %s", t.logprob(), MetricsLine(t.metrics())));
      break;
    }
    case GenerateEvent::kBranchOpened: {
      const arbor::v1::BranchOpened& b = event.branch_opened();
      std::string candidates;
      for (const arbor::v1::BranchCandidate& c : b.candidates()) {
        absl::StrAppend(&candidates, candidates.empty() ? "\"" : " \"",
                        views::TruncateToWidth(views::EscapeTokenText(c.text()), 16), "\"");
      }
      Row(next, "branch", arbor::v1::STRATEGY_BRANCH, std::nullopt,
          absl::StrCat(b.candidates_size(), " candidates after node ", b.parent_node_id(), ": ",
                       candidates));
      break;
    }
    case GenerateEvent::kBranchResolved: {
      const arbor::v1::BranchResolved& r = event.branch_resolved();
      Row(next, "resolved", arbor::v1::STRATEGY_BRANCH, std::nullopt,
          r.winner_node_id() < 0
              ? absl::StrCat(r.pruned_node_ids_size(), " nodes pruned, ", r.reason())
              : absl::StrCat("winner node ", r.winner_node_id(), ", ", r.committed_tokens(),
                             " tokens committed, ", r.pruned_node_ids_size(), " nodes pruned"));
      break;
    }
    case GenerateEvent::kBackspace: {
      const arbor::v1::BackspaceEvent& b = event.backspace();
      next_position_ = b.position();
      Row(absl::StrCat(b.position()), "backspace", arbor::v1::STRATEGY_BACKSPACE,
          piece.retracted ? std::optional(piece.retracted->piece) : std::nullopt,
          absl::StrCat("retracted node ", b.removed_node_id(), " (token ", b.removed_token_id(),
                       ")"));
      break;
    }
    case GenerateEvent::kInsert: {
      const arbor::v1::InsertEvent& insert = event.insert();
      if (next_position_ >= 0) next_position_ += insert.token_ids_size();
      Row(next, views::StrategyName(arbor::v1::STRATEGY_INSERT), arbor::v1::STRATEGY_INSERT,
          insert.text(),
          absl::StrFormat("lp=%7.3f %d token(s), node %d",
                          insert.logprobs_size() > 0 ? insert.logprobs(0) : 0.0f,
                          insert.token_ids_size(),
                          insert.node_ids_size() > 0 ? insert.node_ids(0) : -1));
      break;
    }
    case GenerateEvent::kReasoning:  // The rollouts' tokens come as rows once resolved.
      break;
    case GenerateEvent::kRehomed:
      Row("", "rehomed", arbor::v1::STRATEGY_UNSPECIFIED, std::nullopt, Rehomed(event.rehomed()));
      break;
    case GenerateEvent::kFinished:
      out_ << "\n" << committed_;  // The summary follows on its own line.
      break;
    case GenerateEvent::EVENT_NOT_SET:
      break;
  }
}

}  // namespace arbor::tools
