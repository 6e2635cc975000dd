// The job driver's test harness: a job spec over a tiny fake vocabulary, scripts by position,
// and a Harness that creates jobs against a ScriptedWorker (with a spare for re-homing), a fake
// clock, and the events they emit.
#ifndef ARBOR_TESTS_COORDINATOR_JOB_JOB_HARNESS_H_
#define ARBOR_TESTS_COORDINATOR_JOB_JOB_HARNESS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "base/fake_clock.h"
#include "coordinator/job/job.h"
#include "tests/coordinator/job/scripted_worker.h"

namespace arbor::coordinator::testing {

inline constexpr int32_t kInsertToken = 60;
inline constexpr int32_t kEos = 63;
inline constexpr uint64_t kSeed = 20240611;

// One character per token, so stop strings and text pieces are easy to reason about.
std::string Decode(absl::Span<const int32_t> ids);

// A job over the fake vocabulary: prompt {1, 2, 3}, thinking token kInsertToken, eos kEos.
JobSpec BaseSpec(int32_t max_tokens);

// A script by position (prompt positions 0..2); unlisted positions are calm argmax on token 10.
Script ByPosition(std::map<int32_t, ScriptedStep> steps);

struct Harness {
  explicit Harness(Script script);

  std::shared_ptr<Job> Make(JobSpec spec, JobOptions options = {});
  // A started job of BaseSpec(max_tokens) in Runs of `steps_per_run` steps, the worker holding
  // its answers (ScriptedWorker::Hold): its first Run is in flight.
  std::shared_ptr<Job> StartHeld(int32_t max_tokens, int32_t steps_per_run);
  std::vector<arbor::v1::GenerateEvent> Of(arbor::v1::GenerateEvent::EventCase c) const;

  base::FakeClock clock;
  std::shared_ptr<ScriptedWorker> worker;
  std::shared_ptr<ScriptedWorker> spare;
  std::vector<arbor::v1::GenerateEvent> events;
  std::vector<std::string> rehome_calls;
  absl::Status rehome_error;  // What the re-home callback answers instead of `spare`.
  uint64_t next_id = 100;
  // With `timed`, Make gives jobs a schedule_after that queues here (delay, callback): the test
  // fires them. Without, jobs have none (they never wait).
  bool timed = false;
  std::vector<std::pair<absl::Duration, std::function<void()>>> timers;
};

// Runs `spec` against `script` to its end on a fresh Harness and returns its tree, one line per
// node (parent, token, status, strategy, position, sequence, branch score), for
// reproducibility checks.
std::vector<std::string> RunToTree(Script script, JobSpec spec);

// The job ended, every sequence was released on `worker`, and the tree is consistent.
void ExpectCleanFinish(const Job& job, const ScriptedWorker& worker);

}  // namespace arbor::coordinator::testing

#endif  // ARBOR_TESTS_COORDINATOR_JOB_JOB_HARNESS_H_
