// What the coordinator exports to Prometheus about jobs (docs/API.md, "Prometheus metrics"),
// translated from the events every job emits — the one place job activity becomes metrics. The
// launcher feeds it each job's events from the job's event sink, so the numbers are those the
// clients see: tokens and strategies as the finished event reports them, branch widths,
// backspaces, inserts, re-homes and streamed tokens as they happen, time to first token and
// between tokens as the events were stamped, queue time and end-to-end time when a job ends. Admission (admission.h) exports queue depth and rejections, the gRPC
// server the requests by method and outcome (rpc/request_metrics.h).
//
// Labels come from proto enums (FinishReason, Strategy), so they are bounded.
#ifndef ARBOR_COORDINATOR_SERVICE_JOB_METRICS_H_
#define ARBOR_COORDINATOR_SERVICE_JOB_METRICS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "arbor/v1/generation.pb.h"
#include "google/protobuf/descriptor.h"
#include "metrics/registry.h"

namespace arbor::coordinator {

class JobMetrics {
 public:
  // What the translation remembers of one job between its events.
  struct JobState {
    int64_t last_token_us = -1;  // time_us of the job's last token or insert event; -1: none.
  };

  explicit JobMetrics(metrics::Registry& registry);

  // One event of the job `job` describes. A job's events come in order, one at a time (the
  // job's sink guarantees it); different jobs may call concurrently.
  void Observe(const arbor::v1::GenerateEvent& event, JobState& job);

 private:
  void OnTokens(int64_t time_us, JobState& job);
  void OnFinished(const arbor::v1::FinishedEvent& finished);

  metrics::Family<metrics::Counter>& jobs_finished_;  // By finish reason.
  metrics::Counter& prompt_tokens_;
  metrics::Counter& committed_tokens_;
  metrics::Counter& explored_tokens_;
  // A StrategyCounts field and the counter of its strategy.
  std::vector<std::pair<const google::protobuf::FieldDescriptor*, metrics::Counter*>> strategies_;
  metrics::Histogram& branch_width_;
  metrics::Counter& backspaces_;
  metrics::Counter& inserted_tokens_;
  metrics::Counter& rehomes_;
  metrics::Histogram& time_to_first_token_;
  metrics::Histogram& inter_token_;
  metrics::Counter& streamed_tokens_;
  metrics::Histogram& queue_seconds_;
  metrics::Histogram& job_seconds_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_JOB_METRICS_H_
