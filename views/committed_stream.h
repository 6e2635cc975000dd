// A job's event stream reduced to what can no longer change, for clients that cannot take a
// retraction: OpenAI's streaming format has none (coordinator/http), and a terminal cannot
// unprint text that has already scrolled (`arbor generate`, tools/cmd_generate.cc).
//
// The gRPC stream sends every committed token at once and retracts it with a backspace event
// when the policy re-draws it. Only the tail of the committed path can be backspaced (never a
// prompt or inserted token, and a position at most once), so holding back the latest token's
// text until the next token, insert or finish is enough: the concatenated pieces equal the job's
// committed text, and a backspaced token is never shown. Inserted tokens are final at once, and
// so are tokens the job marks final (TokenEvent.final: its policy cannot backspace them), so a
// greedy or sampled answer is not held back by a step.
#ifndef ARBOR_VIEWS_COMMITTED_STREAM_H_
#define ARBOR_VIEWS_COMMITTED_STREAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::views {

// One committed token as OpenAI's logprobs and Arbor's token strategies report it.
struct FinalToken {
  int32_t id = 0;
  std::string text;   // The token alone (when the request asked for logprobs).
  std::string piece;  // What it added to the streamed text (an insert's all on its first token).
  float logprob = 0;
  arbor::v1::Strategy strategy = arbor::v1::STRATEGY_UNSPECIFIED;
  std::vector<arbor::v1::TokenLogprob> top;  // Best first.
};

// What became final with one event.
struct FinalPiece {
  std::string text;  // The tokens' pieces, concatenated.
  std::vector<FinalToken> tokens;
  // The held token a backspace removed: never released, shown by clients that mark retractions.
  std::optional<FinalToken> retracted;
  // Text of the search's traces (ReasoningEvent), each trace opened by a line naming it: what
  // OpenAI-compatible clients show as reasoning, apart from the answer.
  std::string reasoning;
  // Nothing became final (a retraction alone counts as nothing).
  bool empty() const { return text.empty() && tokens.empty() && reasoning.empty(); }
};

class CommittedStream {
 public:
  // Feeds the job's next event. INTERNAL when a backspace retracts anything but the held token
  // (a broken contract: the client would show text the job no longer has).
  absl::StatusOr<FinalPiece> Push(const arbor::v1::GenerateEvent& event);

  const std::string& job_id() const { return job_id_; }
  // Set once the `finished` event has been pushed.
  const std::optional<arbor::v1::FinishedEvent>& finished() const { return finished_; }

 private:
  struct Held {
    int32_t node_id = 0;
    FinalToken token;
  };
  // Moves the held token, if any, into `piece`.
  void Release(FinalPiece& piece);
  // The event's text, after a line naming its trace when the trace is a new one.
  std::string ReasoningText(const arbor::v1::ReasoningEvent& reasoning);

  std::string job_id_;
  int32_t reasoning_trace_ = -1;  // The trace the last reasoning text belonged to.
  std::optional<Held> held_;
  std::optional<arbor::v1::FinishedEvent> finished_;
};

}  // namespace arbor::views

#endif  // ARBOR_VIEWS_COMMITTED_STREAM_H_
