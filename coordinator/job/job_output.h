// A job's output as its client sees it: the committed text, streamed and held back where a stop
// string could still start (stop_strings.h); the text of the search's traces while they run
// (reasoning_stream.h); the events of tokens, inserts, backspaces, branches, moves and the
// finish, stamped with the job's id and time; the token details (text and alternatives) a client
// asked for; the strategy counts, the usage and the timings.
//
// The job calls it under its own lock, as it records the tree; events leave through `emit`,
// which queues them among the job's side effects so they reach the client in order.
#ifndef ARBOR_COORDINATOR_JOB_JOB_OUTPUT_H_
#define ARBOR_COORDINATOR_JOB_JOB_OUTPUT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "arbor/v1/generation.pb.h"
#include "base/clock.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/reasoning_stream.h"
#include "coordinator/job/stop_strings.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {

class JobOutput {
 public:
  using Decode = std::function<std::string(absl::Span<const int32_t>)>;
  using Emit = std::function<void(arbor::v1::GenerateEvent)>;

  // `spec` and `clock` must outlive this; time counts from now.
  JobOutput(const JobSpec& spec, Decode decode, base::Clock* clock, Emit emit);

  // Stamps `event` with the job's id and time and sends it on.
  void Send(arbor::v1::GenerateEvent event);
  // The token event of the committed node `id` (`final`: no backspace can retract it), with its
  // streamable text. True when a stop string matched: the text is cut before it, and the caller
  // finishes the job next.
  bool SendToken(const SearchTree& tree, NodeId id, bool final);
  // Streams node `id`'s text: appends what became streamable to `piece`; true when a stop
  // string matched. A stop token adds no text of its own but releases what was held back.
  bool PushText(const SearchTree& tree, NodeId id, std::string* piece);
  // A backspace removed the last token: its piece leaves the text.
  void PopText() { text_.Pop(); }
  // The traces' text, sent as ReasoningEvents.
  ReasoningStream& reasoning() { return reasoning_; }
  // The BranchResolved event of a resolution in the tree.
  void SendResolved(const BranchResolution& resolution, const std::vector<float>& scores,
                    const std::string& reason);
  // The Finished event, with the usage, timings and counts as they end.
  void SendFinished(arbor::v1::FinishReason reason, const std::string& error,
                    const SearchTree& tree);

  void Count(arbor::v1::Strategy strategy);
  // A Run left for the worker (the first one ends the queued time), and one came back after
  // `worker_time`.
  void RunSent();
  void RunDone(absl::Duration worker_time);
  // Prompt tokens a prefill found in the worker's prefix cache.
  void AddCachedPromptTokens(int32_t tokens) { cached_prompt_tokens_ += tokens; }

  const std::string& text() const { return text_.text(); }
  const arbor::v1::StrategyCounts& counts() const { return counts_; }
  const arbor::v1::Timings& timings() const { return timings_; }
  arbor::v1::Usage Usage(const SearchTree& tree) const;
  // Microseconds since the job was created.
  int64_t SinceCreated() const;

 private:
  // The token's own text and its top_logprobs alternatives.
  void AddTokenDetail(const SearchTree& tree, const Node& node, arbor::v1::TokenEvent& token) const;

  const JobSpec& spec_;
  const Decode decode_;
  base::Clock* const clock_;
  const Emit emit_;
  const absl::Time created_;
  StreamedText text_;  // Committed text (cut at a stop string).
  ReasoningStream reasoning_;
  arbor::v1::StrategyCounts counts_;
  arbor::v1::Timings timings_;
  int32_t cached_prompt_tokens_ = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_OUTPUT_H_
