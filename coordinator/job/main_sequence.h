// A job's main sequence on its worker: its id, whether the worker holds it, and what the next
// main-path Run must do to it before decoding (prefill the committed path, continue, truncate and
// append); with the state of the main-path Run itself (a fallback step with structural stops off,
// the steps already recorded from its progress). The job changes it as the tree changes, under
// its lock.
#ifndef ARBOR_COORDINATOR_JOB_MAIN_SEQUENCE_H_
#define ARBOR_COORDINATOR_JOB_MAIN_SEQUENCE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "coordinator/job/run_builder.h"

namespace arbor::coordinator {

class MainSequence {
 public:
  // A new sequence `id` whose first Run prefills `prompt`.
  MainSequence(uint64_t id, std::vector<int32_t> prompt) : id_(id) {
    source_.is_new = true;
    source_.append = std::move(prompt);
  }

  uint64_t id() const { return id_; }
  bool live() const { return live_; }  // The worker holds it.
  const SequenceSource& source() const { return source_; }

  // A main-path Run completed on it; true when that Run prefilled it.
  bool RanOnce() {
    const bool prefilled = source_.is_new;
    live_ = true;
    source_ = SequenceSource{};
    return prefilled;
  }
  // The worker no longer holds it (released, or never made): the next Run prefills `path`.
  void Reset(std::vector<int32_t> path) {
    live_ = false;
    source_ = SequenceSource{};
    source_.is_new = true;
    source_.append = std::move(path);
  }
  // The job ended: the worker is asked to release it.
  void Released() { live_ = false; }
  // The coordinator appends `token` (an insert) before the next Run decodes.
  void Append(int32_t token) { source_.append.push_back(token); }
  // A backspace: cut it to `length` tokens and append the re-drawn `token`.
  void Redraw(int32_t length, int32_t token) {
    source_ = SequenceSource{};
    source_.truncate_to = length;
    source_.append = {token};
  }
  // A branch committed: the main path continues on `id`, after `source`.
  void Adopt(uint64_t id, SequenceSource source) {
    id_ = id;
    live_ = !source.is_new;
    source_ = std::move(source);
  }
  // The next main-path Run decodes one step with structural stops off (a fallback).
  void SkipStructuralOnce() { structural_off_once_ = true; }
  bool structural_off_once() const { return structural_off_once_; }
  // A main-path Run is sent: the fallback is spent and no step of it is recorded yet.
  void RunSent() {
    structural_off_once_ = false;
    steps_recorded_ = 0;
  }
  // A step of the Run in flight was recorded from its progress.
  void StepRecorded() { ++steps_recorded_; }
  // The steps recorded from the finished Run's progress, counted afresh for the next Run.
  int TakeStepsRecorded() { return std::exchange(steps_recorded_, 0); }

 private:
  uint64_t id_;
  bool live_ = false;
  SequenceSource source_;
  bool structural_off_once_ = false;
  int steps_recorded_ = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_MAIN_SEQUENCE_H_
