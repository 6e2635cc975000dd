// The text of a search's traces (or rollouts) while they run, as ReasoningEvents: what a client
// shows as the model's thinking before the answer is chosen, so that a search streams within a
// step of its first token instead of going quiet until its branch resolves.
//
// The traces of a fork run side by side on the worker, but text read side by side is no text:
// they are shown one after another, in the order they were forked. The trace on stage streams
// live; the others' text is kept until every trace before them has ended, then comes at once.
// Tokens arrive from the Run's progress and again with its answer, so each sequence takes a
// position only once.
#ifndef ARBOR_COORDINATOR_JOB_REASONING_STREAM_H_
#define ARBOR_COORDINATOR_JOB_REASONING_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/job/stop_strings.h"

namespace arbor::coordinator {

class ReasoningStream {
 public:
  using Emit = std::function<void(arbor::v1::ReasoningEvent)>;

  // `enabled` false: every call is a no-op (the client opted out). Tokens for which `is_stop`
  // holds add no text (a trace's end token is no part of what it says).
  ReasoningStream(bool enabled, StreamedText::Decode decode,
                  std::function<bool(int32_t)> is_stop, Emit emit);

  // A trace forked as sequence `sequence` with its first token `token` at `position`, from the
  // trace of sequence `parent` (none, or a sequence that is no trace such as the answer's: from
  // the answer).
  // `ended`: it can take no more tokens (its first one stopped it).
  void Open(uint64_t sequence, std::optional<uint64_t> parent, int32_t position, int32_t token, bool ended);
  // A token the trace of `sequence` generated at `position`; one already taken, or of a sequence
  // that is no trace, is ignored.
  void Extend(uint64_t sequence, int32_t position, int32_t token);
  // The trace of `sequence` takes no more tokens (it stopped, or goes on in nested traces).
  void End(uint64_t sequence);
  // Every trace has ended (the branch resolved, or the job ended): what is still kept comes now.
  void EndAll();

 private:
  struct Trace {
    int32_t parent = -1;
    int32_t next_position = 0;
    std::unique_ptr<StreamedText> text;
    std::string kept;  // Decoded but not yet sent: the trace is not on stage.
    bool ended = false;
  };

  // Sends what the trace on stage has, and moves on past every ended trace.
  void Show();

  const bool enabled_;
  const StreamedText::Decode decode_;
  const std::function<bool(int32_t)> is_stop_;
  const Emit emit_;
  std::vector<Trace> traces_;
  absl::flat_hash_map<uint64_t, size_t> by_sequence_;
  size_t stage_ = 0;  // The trace being shown; traces_.size() when none is left.
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_REASONING_STREAM_H_
