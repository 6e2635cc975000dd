// The engine's Prometheus metrics (worker_metrics.h) against what its runs and its health say:
// steps and their rows and tokens, generated tokens, prefix-cache hits, KV blocks and bytes,
// sequences.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "metrics/registry.h"
#include "tests/support/metric_samples.h"
#include "tests/worker/engine/engine_harness.h"
#include "worker/engine/engine.h"

namespace arbor::worker {
namespace {

using metrics::testing::SampleValue;
using testing::DecodeItem;
using testing::Prompt;
using testing::TempModel;
using testing::Tokens;

TEST(EngineMetricsTest, CountsWhatTheRunsDid) {
  absl::StatusOr<std::unique_ptr<TempModel>> model = TempModel::Make("tiny", 11);
  ASSERT_TRUE(model.ok()) << model.status();
  metrics::Registry registry;
  WorkerSetupOptions options;
  options.model = (*model)->dir();
  options.kv_tokens = 4096;
  options.threads = 1;
  // The 40-token prompt is prefilled in two chunks; the first holds a whole block (16) and a
  // token after it, as a prefix-cache hit needs.
  options.max_batch_tokens = 24;
  options.metrics = &registry;
  options.kv_dtype = "f32";
  absl::StatusOr<std::unique_ptr<Engine>> engine = testing::LoadEngine(options);
  ASSERT_TRUE(engine.ok()) << engine.status();

  // Two sequences with one prompt, one after the other: the first's full blocks stay cached
  // when it is released, and the second's prefill takes them from the prefix cache.
  int64_t generated = 0;
  int64_t forward_steps = 0;
  for (uint64_t id : {1, 2}) {
    v1::RunRequest request;
    *request.add_items() = DecodeItem(id, Prompt(40), 6);
    absl::StatusOr<v1::RunResponse> response = testing::RunSync(**engine, request);
    ASSERT_TRUE(response.ok()) << response.status();
    generated += static_cast<int64_t>(Tokens(response->results(0)).size());
    forward_steps += response->timings().forward_steps();
    if (id == 1) {
      EXPECT_EQ(testing::ReleaseSync(**engine, {1}), 1);
    }
  }
  const v1::HealthResponse health = (*engine)->Health();
  const std::string text = registry.RenderText();

  EXPECT_EQ(SampleValue(text, "arbor_worker_generated_tokens_total"), generated);
  EXPECT_EQ(generated, 12);
  // Each run took part in every step it counts; the runs did not overlap.
  EXPECT_EQ(SampleValue(text, "arbor_worker_forward_steps_total"), forward_steps);
  EXPECT_EQ(SampleValue(text, "arbor_worker_step_seconds_count"), forward_steps);
  EXPECT_EQ(SampleValue(text, "arbor_worker_step_rows_count"), forward_steps);
  EXPECT_EQ(SampleValue(text, "arbor_worker_step_rows_sum"), forward_steps) << "one row per step";
  EXPECT_EQ(SampleValue(text, "arbor_worker_step_tokens_sum"), health.cache().miss_tokens());
  EXPECT_EQ(SampleValue(text, "arbor_worker_step_tokens_bucket{le=\"32\"}"), forward_steps)
      << "--max_batch_tokens bounds a step";
  EXPECT_GT(health.cache().hit_tokens(), 0);
  EXPECT_EQ(SampleValue(text, "arbor_worker_prefix_cache_hit_tokens_total"),
            health.cache().hit_tokens());
  EXPECT_EQ(SampleValue(text, "arbor_worker_kv_blocks{state=\"used\"}"),
            health.cache().used_blocks());
  EXPECT_EQ(SampleValue(text, "arbor_worker_kv_blocks{state=\"cached\"}"),
            health.cache().cached_blocks());
  EXPECT_EQ(SampleValue(text, "arbor_worker_kv_blocks{state=\"free\"}"),
            health.cache().free_blocks());
  // The same blocks in bytes: layers × K and V × kv heads × head_dim × 4 (f32) per token.
  const model::ModelConfig& config = (*engine)->backend().config();
  const double block_bytes =
      16.0 * config.num_layers * 2 * config.num_kv_heads * config.head_dim * 4;
  for (const char* state : {"used", "cached", "free"}) {
    EXPECT_EQ(SampleValue(text, absl::StrCat("arbor_worker_kv_bytes{state=\"", state, "\"}")),
              SampleValue(text, absl::StrCat("arbor_worker_kv_blocks{state=\"", state, "\"}")) *
                  block_bytes)
        << state;
  }
  EXPECT_DOUBLE_EQ(SampleValue(text, "arbor_worker_kv_used_ratio"),
                   static_cast<double>(health.cache().used_blocks()) /
                       static_cast<double>(health.cache().total_blocks()));
  EXPECT_EQ(SampleValue(text, "arbor_worker_sequences"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_worker_active_runs"), 0);

  EXPECT_EQ(testing::ReleaseSync(**engine, {2}), 1);
  EXPECT_EQ(SampleValue(registry.RenderText(), "arbor_worker_sequences"), 0);
}

}  // namespace
}  // namespace arbor::worker
