// Logit processors (RunItem.processors) in the engine over a tiny make-model checkpoint, against
// float64 arithmetic on the unprocessed distribution: a decode item with a repetition penalty,
// frequency and presence penalties and a logit bias reports, at every step, top-K log-probs and a
// log-sum-exp whose sum is the processed logit the definition gives from the raw logit — the raw
// logits come from teacher-forced scoring of the same tokens (which processors do not touch), so
// the reference shares no code with the worker's processing. Also: bad processors get precise
// statuses.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/worker/engine/engine_harness.h"
#include "tests/worker/engine/tiny_model_suite.h"
#include "worker/engine/engine.h"

namespace arbor::worker {
namespace {

using testing::DecodeItem;
using testing::Prompt;
using testing::Tokens;
using v1::RunItem;
using v1::RunRequest;
using v1::RunResult;

constexpr int32_t kTopK = 32;

class EngineProcessorsTest : public testing::TinyModelSuite<12> {
 protected:
  void SetUp() override {
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.kv_tokens = 4096;
    options.threads = 1;
    absl::StatusOr<std::unique_ptr<Engine>> engine = testing::LoadEngine(options);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }
  absl::StatusOr<v1::RunResponse> Run(const RunItem& item) {
    RunRequest request;
    *request.add_items() = item;
    return testing::RunSync(*engine_, request);
  }

  std::unique_ptr<Engine> engine_;
};

// The processed logit of `token` (raw logit x) after `context` (output from `prompt_length`), in
// float64 from the definition.
double Processed(double x, int32_t token, const std::vector<int32_t>& context,
                 int32_t prompt_length, const v1::LogitProcessors& p) {
  int count = 0;
  bool seen = false;
  for (size_t i = 0; i < context.size(); ++i) {
    if (context[i] != token) continue;
    seen = true;
    if (static_cast<int32_t>(i) >= prompt_length) ++count;
  }
  if (seen) x = x > 0 ? x / p.repetition_penalty() : x * p.repetition_penalty();
  if (count > 0) x -= double{p.frequency_penalty()} * count + p.presence_penalty();
  if (const auto it = p.logit_bias().find(token); it != p.logit_bias().end()) x += it->second;
  return x;
}

TEST_F(EngineProcessorsTest, DecodeStepsSeeTheProcessedLogits) {
  const std::vector<int32_t> prompt = Prompt(12, 3);
  constexpr int32_t kSteps = 8;
  // The unprocessed run first, to bias tokens the distribution actually ranks high.
  RunItem plain = DecodeItem(1, prompt, kSteps);
  plain.set_top_k(kTopK);
  plain.set_top_k_every_step(true);
  absl::StatusOr<v1::RunResponse> first = Run(plain);
  ASSERT_TRUE(first.ok()) << first.status();
  const v1::StepResult& step0 = first->results(0).steps(0);

  RunItem item = DecodeItem(2, prompt, kSteps);
  item.set_top_k(kTopK);
  item.set_top_k_every_step(true);
  item.set_prompt_length(static_cast<int32_t>(prompt.size()));
  v1::LogitProcessors& p = *item.mutable_processors();
  p.set_repetition_penalty(1.4f);
  p.set_frequency_penalty(0.7f);
  p.set_presence_penalty(0.3f);
  (*p.mutable_logit_bias())[step0.top_k(0).token_id()] = -2.5f;
  (*p.mutable_logit_bias())[step0.top_k(3).token_id()] = 1.75f;
  (*p.mutable_logit_bias())[prompt[0]] = 0.5f;  // Also under the repetition penalty.
  absl::StatusOr<v1::RunResponse> processed = Run(item);
  ASSERT_TRUE(processed.ok()) << processed.status();
  const RunResult& decoded = processed->results(0);
  ASSERT_EQ(decoded.steps_size(), kSteps);

  // Raw logits at the same positions: teacher-forced scoring of the same tokens, unprocessed.
  std::vector<int32_t> all = prompt;
  for (int32_t token : Tokens(decoded)) all.push_back(token);
  RunItem score = DecodeItem(3, all, 0);
  score.set_score_tokens(kSteps);
  score.set_top_k(kTopK);
  absl::StatusOr<v1::RunResponse> scored = Run(score);
  ASSERT_TRUE(scored.ok()) << scored.status();
  ASSERT_EQ(scored->results(0).steps_size(), kSteps);

  int compared = 0;
  for (int s = 0; s < kSteps; ++s) {
    SCOPED_TRACE(::testing::Message() << "step " << s);
    const v1::StepResult& raw = scored->results(0).steps(s);
    const v1::StepResult& got = decoded.steps(s);
    ASSERT_EQ(raw.position(), got.position());
    std::map<int32_t, double> raw_logit;
    for (const v1::TokenLogprob& t : raw.top_k()) {
      raw_logit[t.token_id()] = double{t.logprob()} + raw.metrics().logsumexp();
    }
    const std::vector<int32_t> context(all.begin(), all.begin() + prompt.size() + s);
    for (const v1::TokenLogprob& t : got.top_k()) {
      const auto it = raw_logit.find(t.token_id());
      if (it == raw_logit.end()) continue;
      const double want =
          Processed(it->second, t.token_id(), context, static_cast<int32_t>(prompt.size()), p);
      const double have = double{t.logprob()} + got.metrics().logsumexp();
      EXPECT_NEAR(have, want, 1e-4 * (1 + std::abs(want))) << "token " << t.token_id();
      ++compared;
    }
  }
  EXPECT_GT(compared, kSteps * kTopK / 2);  // Most of each top-K is in both lists.
}

TEST_F(EngineProcessorsTest, BadProcessorsGetPreciseStatuses) {
  auto refused = [&](const RunItem& item, const std::string& needle) {
    absl::StatusOr<v1::RunResponse> response = Run(item);
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(response.status().message().find(needle), std::string::npos) << response.status();
  };
  RunItem item = DecodeItem(1, Prompt(4), 2);
  (*item.mutable_processors()->mutable_logit_bias())[1 << 20] = 1.0f;
  refused(item, "items[0].processors.logit_bias[1048576]");
  item = DecodeItem(1, Prompt(4), 2);
  item.mutable_processors()->set_repetition_penalty(-1.0f);
  refused(item, "items[0].processors.repetition_penalty");
  item = DecodeItem(1, Prompt(4), 2);
  item.set_prompt_length(-3);
  refused(item, "items[0].prompt_length");
  // The engine keeps serving.
  EXPECT_TRUE(Run(DecodeItem(1, Prompt(4), 2)).ok());
}

}  // namespace
}  // namespace arbor::worker
