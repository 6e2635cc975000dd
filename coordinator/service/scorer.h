// Teacher-forced scoring (Generation.Score): a prompt and continuations in, the log-probability,
// rank, alternatives and entropix metrics of every continuation token out, nothing sampled.
//
// All continuations go to one worker as one Run: one new sequence each, the prompt followed by
// the continuation, with RunItem.score_tokens covering the continuation, so the worker batches
// the scored tokens like a prefill and the continuations share the prompt's KV blocks through
// its prefix cache. The sequences are released when the answer is in. A worker that fails with
// UNAVAILABLE is replaced once by another. Token texts are sanitised to valid UTF-8 (a piece may
// hold part of a character).
#ifndef ARBOR_COORDINATOR_SERVICE_SCORER_H_
#define ARBOR_COORDINATOR_SERVICE_SCORER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/service/job_launcher.h"

namespace arbor::coordinator {

inline constexpr int kMaxContinuations = 64;

class Scorer {
 public:
  using Done = std::function<void(absl::StatusOr<arbor::v1::ScoreResponse>)>;

  // `launcher` (validation, policy defaults, routing, sequence ids) must outlive the scorer.
  explicit Scorer(JobLauncher* launcher) : launcher_(launcher) {}

  // Checks the request, then runs it; `done` is called exactly once, on any thread, possibly
  // before Score returns. INVALID_ARGUMENT naming the field for a bad request,
  // FAILED_PRECONDITION for text without a tokenizer, UNAVAILABLE without a worker,
  // DEADLINE_EXCEEDED past `deadline`.
  void Score(const arbor::v1::ScoreRequest& request, absl::Time deadline, Done done);

 private:
  struct Call;
  absl::StatusOr<std::shared_ptr<Call>> Prepare(const arbor::v1::ScoreRequest& request,
                                                absl::Time deadline, Done done);
  // Routes the call (not to `exclude`) and sends its Run.
  void Send(std::shared_ptr<Call> call, const std::string& exclude);
  void OnRun(std::shared_ptr<Call> call, const std::string& worker_id,
             absl::StatusOr<arbor::v1::RunResponse> response);

  JobLauncher* const launcher_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_SCORER_H_
