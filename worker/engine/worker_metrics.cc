#include "worker/engine/worker_metrics.h"

namespace arbor::worker {
namespace {

metrics::Family<metrics::Gauge>& KvBlocks(metrics::Registry& registry) {
  return registry.AddGauge("arbor_worker_kv_blocks",
                           "KV cache blocks by state: used (held by live sequences), cached "
                           "(unreferenced, kept for prefix reuse, evictable) and free.",
                           {{"state", {"used", "cached", "free"}}});
}

metrics::Family<metrics::Gauge>& KvBytes(metrics::Registry& registry) {
  return registry.AddGauge("arbor_worker_kv_bytes",
                           "KV cache memory by state (blocks × the bytes one block holds).",
                           {{"state", {"used", "cached", "free"}}});
}

}  // namespace

WorkerMetrics::WorkerMetrics(metrics::Registry& registry, int64_t kv_block_bytes)
    : forward_steps_(
          registry.AddCounter("arbor_worker_forward_steps_total", "Forward steps run.").Get()),
      step_seconds_(registry
                        .AddHistogram("arbor_worker_step_seconds",
                                      "Wall time of one forward step, its metrics and policy "
                                      "included, in seconds.",
                                      {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                       2.5, 5, 10})
                        .Get()),
      step_rows_(registry
                     .AddHistogram("arbor_worker_step_rows",
                                   "Rows (sequences) batched into one forward step.",
                                   metrics::ExponentialBuckets(1, 2, 10))
                     .Get()),
      step_tokens_(registry
                       .AddHistogram("arbor_worker_step_tokens",
                                     "Tokens computed by one forward step (prefill chunks and "
                                     "decode rows).",
                                     metrics::ExponentialBuckets(1, 2, 14))
                       .Get()),
      generated_tokens_(registry
                            .AddCounter("arbor_worker_generated_tokens_total",
                                        "Tokens decode steps appended to sequences (sampled, or "
                                        "inserted by the local policy).")
                            .Get()),
      prefix_hit_tokens_(registry
                             .AddCounter("arbor_worker_prefix_cache_hit_tokens_total",
                                         "Tokens whose KV came from the prefix cache instead of "
                                         "a forward step.")
                             .Get()),
      kv_used_(KvBlocks(registry).WithLabels({"used"})),
      kv_cached_(KvBlocks(registry).WithLabels({"cached"})),
      kv_free_(KvBlocks(registry).WithLabels({"free"})),
      kv_block_bytes_(kv_block_bytes),
      kv_used_bytes_(KvBytes(registry).WithLabels({"used"})),
      kv_cached_bytes_(KvBytes(registry).WithLabels({"cached"})),
      kv_free_bytes_(KvBytes(registry).WithLabels({"free"})),
      kv_used_ratio_(registry
                         .AddGauge("arbor_worker_kv_used_ratio",
                                   "Share of the KV cache's blocks held by live sequences, [0, "
                                   "1] (cached blocks are reusable, so they count as room).")
                         .Get()),
      sequences_(registry.AddGauge("arbor_worker_sequences", "Live sequences (with KV).").Get()),
      active_runs_(
          registry.AddGauge("arbor_worker_active_runs", "Run requests being executed.").Get()) {}

void WorkerMetrics::OnStep(double seconds, int64_t rows, int64_t tokens) {
  forward_steps_.Inc();
  step_seconds_.Observe(seconds);
  step_rows_.Observe(static_cast<double>(rows));
  step_tokens_.Observe(static_cast<double>(tokens));
}

void WorkerMetrics::Publish(const v1::HealthResponse& health) {
  const v1::CacheStats& cache = health.cache();
  kv_used_.Set(static_cast<double>(cache.used_blocks()));
  kv_cached_.Set(static_cast<double>(cache.cached_blocks()));
  kv_free_.Set(static_cast<double>(cache.free_blocks()));
  if (kv_block_bytes_ > 0) {
    const double block_bytes = static_cast<double>(kv_block_bytes_);
    kv_used_bytes_.Set(static_cast<double>(cache.used_blocks()) * block_bytes);
    kv_cached_bytes_.Set(static_cast<double>(cache.cached_blocks()) * block_bytes);
    kv_free_bytes_.Set(static_cast<double>(cache.free_blocks()) * block_bytes);
  }
  if (cache.total_blocks() > 0) {
    kv_used_ratio_.Set(static_cast<double>(cache.used_blocks()) /
                       static_cast<double>(cache.total_blocks()));
  }
  sequences_.Set(health.live_sequences());
  active_runs_.Set(health.active_runs());
  prefix_hit_tokens_.Inc(static_cast<double>(cache.hit_tokens() - published_hit_tokens_));
  published_hit_tokens_ = cache.hit_tokens();
}

}  // namespace arbor::worker
