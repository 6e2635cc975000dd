// What a worker exports to Prometheus (docs/API.md, "Prometheus metrics"): forward steps, their
// time and size, tokens generated, prefix-cache hits, KV blocks and live sequences. Run requests
// by outcome are counted for every gRPC method by the server itself (rpc/request_metrics.h).
//
// The engine owns one and updates it from its scheduling thread; the handles are taken once, at
// construction, so a step pays a few relaxed atomic adds.
#ifndef ARBOR_WORKER_ENGINE_WORKER_METRICS_H_
#define ARBOR_WORKER_ENGINE_WORKER_METRICS_H_

#include <cstdint>

#include "arbor/v1/worker.pb.h"
#include "metrics/registry.h"

namespace arbor::worker {

class WorkerMetrics {
 public:
  // `kv_block_bytes`: what one KV block holds in memory (0: the KV is not exported in bytes).
  WorkerMetrics(metrics::Registry& registry, int64_t kv_block_bytes);

  // One forward step: its wall time (forward, metrics and policy), rows and tokens.
  void OnStep(double seconds, int64_t rows, int64_t tokens);
  // Tokens a decode step appended to a sequence (sampled, or inserted by the local policy).
  void OnGenerated(int64_t tokens) { generated_tokens_.Inc(static_cast<double>(tokens)); }
  // The engine's health after an iteration: gauges, and the prefix-cache hits since the last.
  void Publish(const v1::HealthResponse& health);

 private:
  metrics::Counter& forward_steps_;
  metrics::Histogram& step_seconds_;
  metrics::Histogram& step_rows_;
  metrics::Histogram& step_tokens_;
  metrics::Counter& generated_tokens_;
  metrics::Counter& prefix_hit_tokens_;
  metrics::Gauge& kv_used_;
  metrics::Gauge& kv_cached_;
  metrics::Gauge& kv_free_;
  int64_t kv_block_bytes_;
  metrics::Gauge& kv_used_bytes_;
  metrics::Gauge& kv_cached_bytes_;
  metrics::Gauge& kv_free_bytes_;
  metrics::Gauge& kv_used_ratio_;
  metrics::Gauge& sequences_;
  metrics::Gauge& active_runs_;
  int64_t published_hit_tokens_ = 0;  // The cache's running total as of the last Publish.
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_ENGINE_WORKER_METRICS_H_
