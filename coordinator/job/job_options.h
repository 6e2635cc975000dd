// How a job runs on its worker: the size of its Runs, whether they stream, the top-K it asks
// for, and how long and how often it waits and retries when the worker fails or runs out of KV
// (job.h; the coordinator's values come from its flags).
#ifndef ARBOR_COORDINATOR_JOB_JOB_OPTIONS_H_
#define ARBOR_COORDINATOR_JOB_JOB_OPTIONS_H_

#include <cstdint>

#include "absl/time/time.h"

namespace arbor::coordinator {

struct JobOptions {
  int32_t steps_per_run = 64;  // Decode steps per main-path Run, at most.
  // Runs stream their steps (Worker.RunStream): each main-path token reaches the client one
  // forward step after the worker decoded it, and so does a branch's rollouts' text (as the
  // traces'); a Run may be long without delaying the first token. Without streaming, tokens
  // come when a Run ends, so:
  bool stream_runs = true;
  // Unstreamed, a main-path Run decodes as many steps as the job has generated so far, at least
  // this many: the first tokens reach the client after a short Run (time to first token), and
  // the Runs then double up to steps_per_run, so the extra Runs this costs grow only
  // logarithmically.
  int32_t first_run_steps = 4;
  int32_t top_k = 64;  // Top-K asked of the worker (<= its max_top_k).
  absl::Duration run_timeout = absl::Minutes(2);
  int32_t max_consecutive_failures = 3;  // Worker failures in a row before the job fails.
  // RESOURCE_EXHAUSTED from the worker is retried there this many times in a row, the first
  // after exhausted_backoff and each next one after twice the last wait, before re-homing.
  // Needs JobEnvironment::schedule_after.
  int32_t exhausted_retries = 3;
  absl::Duration exhausted_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);  // The doubling waits stop growing here.
  // How long a job may wait in a row for KV or for a worker to take it, before it fails; the
  // deadline bounds it too. A successful Run ends the wait.
  absl::Duration max_wait = absl::Minutes(5);
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_OPTIONS_H_
