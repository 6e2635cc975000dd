// The metrics and top-K the engine reports per step, against an independent float64 PyTorch
// forward (tests/model/llama_reference.py, reduced per docs/ARCHITECTURE.md §4.1 by
// step_metrics_reference.py), on the tiny, small and qwen2-tiny (q/k/v biases) presets: several
// prompts and positions, EXACT and REFERENCE attention modes, and distributions reached after a
// fork, a truncate and a prefix-cache hit, and teacher-forced scored steps (with their ranks).
//
// Tolerances: the engine computes in fp32 (weights, KV, logits), the reference in float64. Over
// these shallow models the logits agree to ~1e-5 relative, so entropy (bits) and the attention
// statistics are held to 2e-3 absolute plus 2e-3 relative, varentropy (bits², a fourth-moment
// quantity) to 1e-2 absolute plus 5e-3 relative, and log-probabilities to 2e-3 nats.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/support/python_reference.h"
#include "tests/worker/engine/engine_harness.h"

namespace arbor::worker {
namespace {

using testing::DecodeItem;
using testing::Prompt;
using testing::RunSync;
using testing::TempModel;

constexpr int kTopK = 8;
constexpr int kReferenceLen = 64;

// A reported step and the tokens its distribution was computed after.
struct Observed {
  std::string what;
  std::vector<int32_t> context;
  v1::StepResult step;
  bool reference_mode = false;
};

void ExpectNear(double actual, double expected, double abs_tol, double rel_tol,
                const std::string& what) {
  EXPECT_LE(std::abs(actual - expected), abs_tol + rel_tol * std::abs(expected))
      << what << ": engine " << actual << " vs reference " << expected;
}

// Runs the Python reference once over every context.
nlohmann::json Reference(const std::string& model_dir, const std::vector<Observed>& observed) {
  nlohmann::json request;
  request["model_dir"] = model_dir;
  request["reference_len"] = kReferenceLen;
  request["contexts"] = nlohmann::json::array();
  for (const Observed& o : observed) request["contexts"].push_back(o.context);
  return arbor::testing::RunPythonReference("tests/worker/engine/step_metrics_reference.py",
                                            request, absl::Seconds(240));
}

class EngineReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TempModel>> model = TempModel::Make(GetParam(), 21);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.kv_tokens = 2048;
    options.threads = 2;
    absl::StatusOr<std::unique_ptr<Engine>> engine = testing::LoadEngine(options);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  // Runs `item` and records each step with its context; `sequence` holds the tokens of the
  // item's sequence before the run and is extended with the sampled ones.
  v1::RunResult Run(const std::string& what, v1::RunItem item, std::vector<int32_t>& sequence,
                    bool reference_mode = false) {
    item.set_top_k(kTopK);
    item.set_top_k_every_step(true);
    if (reference_mode) {
      item.mutable_policy()->set_attention_mode(v1::ATTENTION_MODE_REFERENCE);
      item.mutable_policy()->set_reference_len(kReferenceLen);
    }
    sequence.insert(sequence.end(), item.append().begin(), item.append().end());
    v1::RunRequest request;
    *request.add_items() = item;
    absl::StatusOr<v1::RunResponse> response = RunSync(*engine_, request);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {};
    const v1::RunResult& result = response->results(0);
    for (const v1::StepResult& step : result.steps()) {
      EXPECT_EQ(step.position(), static_cast<int>(sequence.size())) << what;
      observed_.push_back(
          {absl::StrCat(what, " @", step.position()), sequence, step, reference_mode});
      sequence.push_back(step.token_id());
    }
    return result;
  }

  // Runs a teacher-forced scoring `item` (a new sequence) and records each scored step with the
  // tokens before it.
  void Score(const std::string& what, v1::RunItem item) {
    item.set_top_k(kTopK);
    const std::vector<int32_t> sequence(item.append().begin(), item.append().end());
    v1::RunRequest request;
    *request.add_items() = item;
    absl::StatusOr<v1::RunResponse> response = RunSync(*engine_, request);
    ASSERT_TRUE(response.ok()) << response.status();
    const v1::RunResult& result = response->results(0);
    ASSERT_EQ(result.steps_size(), item.score_tokens()) << what;
    for (const v1::StepResult& step : result.steps()) {
      EXPECT_EQ(step.token_id(), sequence[step.position()]) << what;
      observed_.push_back(
          {absl::StrCat(what, " @", step.position()),
           std::vector<int32_t>(sequence.begin(), sequence.begin() + step.position()), step,
           false});
    }
  }

  std::unique_ptr<TempModel> model_;
  std::unique_ptr<Engine> engine_;
  std::vector<Observed> observed_;
};

TEST_P(EngineReferenceTest, StepMetricsAndTopKMatchFloat64Forward) {
  // Two prompts, one spanning several KV blocks; decode a few positions of each.
  std::vector<int32_t> a, b;
  Run("prompt a", DecodeItem(1, Prompt(37, 3), 3), a);
  Run("prompt b", DecodeItem(2, Prompt(5, 90), 2, 9), b);
  // REFERENCE mode on a fork of a (shares its first 33 tokens, copies a partial block).
  std::vector<int32_t> fork(a.begin(), a.begin() + 33);
  v1::RunItem forked = DecodeItem(3, {}, 2, 4);
  forked.set_fork_from(1);
  forked.set_fork_length(33);
  Run("fork of a, REFERENCE", forked, fork, /*reference_mode=*/true);
  // Backspace-style truncate of a, then decode again with another seed.
  std::vector<int32_t> truncated(a.begin(), a.begin() + 20);
  v1::RunItem truncate = DecodeItem(1, {}, 2, 77);
  truncate.set_truncate_to(20);
  Run("truncate of a", truncate, truncated);
  // A new sequence whose prompt's first two blocks are in the prefix cache.
  std::vector<int32_t> hit;
  std::vector<int32_t> prompt = Prompt(37, 3);
  prompt.back() = 11;
  v1::RunResult cached = Run("prefix hit", DecodeItem(4, prompt, 2), hit);
  EXPECT_EQ(cached.cached_tokens(), 32);
  // Appending to b after its run (its last sampled token is still pending).
  Run("append to b", DecodeItem(2, {40, 41, 42}, 2), b, /*reference_mode=*/true);

  // Teacher-forced scoring of 6 tokens after 29 of prompt a's tokens: two prompt blocks come
  // from the prefix cache, then a plain chunk, then one row per scored token in one step.
  std::vector<int32_t> scored = Prompt(35, 3);
  scored.insert(scored.end(), {17, 3, 250, 9, 9, 120});
  v1::RunItem score = DecodeItem(5, scored, 0);
  score.set_score_tokens(6);
  Score("scored", score);

  const nlohmann::json reference = Reference(model_->dir(), observed_);
  ASSERT_TRUE(reference.is_object());
  ASSERT_EQ(reference["results"].size(), observed_.size());
  int reference_checked = 0;
  for (size_t i = 0; i < observed_.size(); ++i) {
    const Observed& o = observed_[i];
    const nlohmann::json& ref = reference["results"][i];
    const v1::Metrics& m = o.step.metrics();
    ExpectNear(m.entropy(), ref["entropy"], 2e-3, 2e-3, o.what + " entropy");
    ExpectNear(m.varentropy(), ref["varentropy"], 1e-2, 5e-3, o.what + " varentropy");
    const nlohmann::json& attn = ref[o.reference_mode ? "reference" : "exact"];
    reference_checked += o.reference_mode;
    for (const auto& [name, value] : std::vector<std::pair<std::string, float>>{
             {"attn_entropy", m.attn_entropy()},
             {"attn_varentropy", m.attn_varentropy()},
             {"attn_head_varentropy", m.attn_head_varentropy()},
             {"agreement", m.agreement()},
             {"interaction_strength", m.interaction_strength()}}) {
      ExpectNear(value, attn[name], 2e-3, 2e-3, o.what + " " + name);
    }
    const std::vector<double> logprobs = ref["logprobs"];
    const double logprob = logprobs[o.step.token_id()];
    ExpectNear(o.step.logprob(), logprob, 2e-3, 0, o.what + " logprob");
    if (o.step.rank() > 0) {  // Scored steps: the rank up to near-ties.
      const auto above = [&](double margin) {
        return 1 + std::count_if(logprobs.begin(), logprobs.end(),
                                 [&](double l) { return l > logprob + margin; });
      };
      EXPECT_GE(o.step.rank(), above(2e-3)) << o.what;
      EXPECT_LE(o.step.rank(), above(-2e-3)) << o.what;
    }
    // The reported top-K: the reference's K largest (up to near-ties), in descending order.
    std::vector<double> sorted = logprobs;
    std::sort(sorted.rbegin(), sorted.rend());
    ASSERT_EQ(o.step.top_k_size(), kTopK) << o.what;
    for (int k = 0; k < kTopK; ++k) {
      const v1::TokenLogprob& top = o.step.top_k(k);
      ExpectNear(top.logprob(), logprobs[top.token_id()], 2e-3, 0, o.what + " top-K logprob");
      ExpectNear(top.logprob(), sorted[k], 2e-3, 0, o.what + " top-K rank");
    }
  }
  EXPECT_EQ(observed_.size(), 19u);
  EXPECT_EQ(reference_checked, 4);
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineReferenceTest,
                         ::testing::Values("tiny", "small", "qwen2-tiny"));

}  // namespace
}  // namespace arbor::worker
