// The engine on backend reductions grows token for token the trees it grew
// from full rows: the same engine over a decorator that asks the CPU backend for the full logits
// and score rows (the debug path) and reduces them the plain way — the entropix metrics of the
// whole row, the candidates by sorting every (logit, id) pair, the probed token's rank by
// counting — must answer every Run with the same bytes as the engine over the backend's own
// fused reduction. The battery covers every strategy of the decision matrix (thresholds that
// put every state in one row, and random thresholds that mix them), SEARCH and CANONICAL modes,
// structural stops and their fallbacks, bans, reported top-K, EXACT and REFERENCE attention,
// random sampling parameters (top_k up to 1,024) and teacher-forced scoring, over many seeds, on
// a vocabulary where the candidates are a sliver of the row (small: 2,048) and one where they are
// a large share of it (tiny: 512).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "entropix/logit_metrics.h"
#include "entropix/top_k.h"
#include "tests/worker/engine/engine_harness.h"
#include "tests/worker/engine/forwarding_backend.h"
#include "worker/backend/backend.h"

namespace arbor::worker {
namespace {

using testing::DecodeItem;
using testing::Prompt;
using testing::RunSync;

// The reduction of one row computed from its full rows without the backend's fused pass.
RowReduction PlainReduction(const ReductionRequest& request, const std::vector<float>& logits,
                            const std::vector<float>& scores, int num_heads) {
  RowReduction out;
  out.request = request;
  const int vocab = static_cast<int>(logits.size());
  absl::StatusOr<entropix::LogitMetrics> metrics =
      entropix::ComputeLogitMetrics(logits.data(), vocab, /*top_k=*/0);
  if (!metrics.ok()) {
    out.status = metrics.status();
    return out;
  }
  const int keys = static_cast<int>(scores.size()) / num_heads;
  absl::StatusOr<entropix::AttentionMetrics> attention = entropix::ComputeAttentionMetrics(
      scores.data(), num_heads, keys, keys, request.attention_mode, request.reference_len);
  if (!attention.ok()) {
    out.status = attention.status();
    return out;
  }
  out.logits = *metrics;
  out.attention = *attention;
  std::vector<entropix::ScoredIndex> all(vocab);
  for (int i = 0; i < vocab; ++i) all[i] = {logits[i], i};
  std::sort(all.begin(), all.end(), entropix::RanksBefore);
  all.resize(std::min(vocab, request.candidates));
  out.candidates = entropix::CandidateRow::Of(all);
  if (request.probe_token >= 0) {
    out.probe_logit = logits[request.probe_token];
    out.probe_rank =
        1 + static_cast<int32_t>(std::count_if(logits.begin(), logits.end(),
                                               [&](float x) { return x > out.probe_logit; }));
  }
  return out;
}

// Answers every reduction from the full rows through PlainReduction.
class FullRowBackend : public testing::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;

  absl::Status Forward(std::span<const ForwardRow> rows, const TensorTap& tap) override {
    const model::ModelConfig& c = config();
    std::vector<ForwardRow> full(rows.begin(), rows.end());
    std::vector<std::vector<float>> logits(rows.size()), scores(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].reduction == nullptr) continue;
      logits[r].resize(c.vocab_size);
      scores[r].resize(static_cast<size_t>(c.num_heads) *
                       (rows[r].start_pos + rows[r].tokens.size()));
      full[r].reduction = nullptr;
      full[r].logits = logits[r].data();
      full[r].last_scores = scores[r].data();
    }
    if (absl::Status status = ForwardingBackend::Forward(full, tap); !status.ok()) return status;
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].reduction == nullptr) continue;
      *rows[r].reduction =
          PlainReduction(rows[r].reduction->request, logits[r], scores[r], c.num_heads);
    }
    ++forwards_;
    return absl::OkStatus();
  }
  int forwards() const { return forwards_; }

 private:
  int forwards_ = 0;
};

// Decision-matrix rows the thresholds can pin every state to, and a random mix.
enum class Pin { kArgmax, kInsert, kBranch, kBackspace, kAdaptive, kRandom };

void PinThresholds(Pin pin, std::mt19937& rng, v1::Thresholds& t) {
  std::uniform_real_distribution<float> entropy(0.0f, 6.0f), varentropy(0.0f, 12.0f);
  switch (pin) {
    case Pin::kArgmax:
      t.set_lelv_entropy(64);
      t.set_lelv_varentropy(4096);
      return;
    case Pin::kInsert:
      t.set_lelv_entropy(0);
      t.set_helv_entropy(0);
      t.set_helv_varentropy(4096);
      return;
    case Pin::kBranch:
      t.set_lelv_entropy(0);
      t.set_helv_entropy(64);
      t.set_lehv_entropy(64);
      t.set_lehv_varentropy(0);
      return;
    case Pin::kBackspace:
      t.set_lelv_entropy(0);
      t.set_helv_entropy(64);
      t.set_lehv_entropy(0);
      t.set_hehv_entropy(0);
      t.set_hehv_varentropy(0);
      return;
    case Pin::kAdaptive:
      t.set_lelv_entropy(0);
      t.set_helv_entropy(64);
      t.set_lehv_entropy(0);
      t.set_hehv_entropy(64);
      return;
    case Pin::kRandom:
      t.set_lelv_entropy(entropy(rng) / 4);
      t.set_lelv_varentropy(varentropy(rng) / 4);
      t.set_helv_entropy(entropy(rng));
      t.set_helv_varentropy(varentropy(rng));
      t.set_lehv_entropy(entropy(rng));
      t.set_lehv_varentropy(varentropy(rng));
      t.set_hehv_entropy(entropy(rng));
      t.set_hehv_varentropy(varentropy(rng));
      return;
  }
}

// One decoding item of the battery: prompt, policy and options drawn from `seed`.
v1::RunItem BatteryItem(uint64_t id, uint32_t seed, Pin pin) {
  std::mt19937 rng(seed);
  auto chance = [&rng](double p) { return std::bernoulli_distribution(p)(rng); };
  v1::RunItem item = DecodeItem(id, Prompt(6 + seed % 11, static_cast<int32_t>(seed)), 12, seed);
  v1::PolicyConfig& policy = *item.mutable_policy();
  policy.set_mode(chance(0.3) ? v1::POLICY_MODE_CANONICAL : v1::POLICY_MODE_SEARCH);
  policy.mutable_insert()->add_tokens(5);
  policy.mutable_insert()->add_tokens(6);
  policy.mutable_insert()->set_cooldown(0);
  PinThresholds(pin, rng, *policy.mutable_thresholds());
  if (chance(0.5)) {
    v1::SamplingParams& sampling = *policy.mutable_sampling();
    sampling.set_top_k(std::uniform_int_distribution<int32_t>(1, 1024)(rng));
    sampling.set_temperature(std::uniform_real_distribution<float>(0.1f, 2.0f)(rng));
    sampling.set_min_p(std::uniform_real_distribution<float>(0.0f, 0.2f)(rng));
  }
  if (chance(0.5)) {
    policy.set_attention_mode(v1::ATTENTION_MODE_REFERENCE);
    policy.set_reference_len(std::uniform_int_distribution<int32_t>(1, 64)(rng));
  }
  item.set_stop_on_structural(chance(0.5));
  item.set_top_k(std::uniform_int_distribution<int32_t>(0, 12)(rng));
  item.set_top_k_every_step(chance(0.3));
  const int32_t length = item.append_size();
  for (int b = 0; b < 3; ++b) {  // Bans at the first positions it decodes.
    v1::TokenBan* ban = item.add_bans();
    ban->set_position(length + b);
    ban->set_token_id(std::uniform_int_distribution<int32_t>(0, 255)(rng));
  }
  return item;
}

// A teacher-forced item: a prompt and 8 scored tokens.
v1::RunItem ScoringItem(uint64_t id, uint32_t seed) {
  v1::RunItem item = DecodeItem(id, Prompt(14, static_cast<int32_t>(seed)), 0, seed);
  item.set_score_tokens(8);
  item.set_top_k(static_cast<int32_t>(seed % 7));
  if (seed % 2 == 0) {
    item.mutable_policy()->set_attention_mode(v1::ATTENTION_MODE_REFERENCE);
    item.mutable_policy()->set_reference_len(32);
  }
  return item;
}

class EngineReductionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::TempModel>> model =
        testing::TempModel::Make(GetParam(), 11);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    fused_ = Load(false);
    plain_ = Load(true);
  }

  std::unique_ptr<Engine> Load(bool plain) {
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.kv_tokens = 8192;
    options.threads = 2;
    if (plain) {
      options.wrap_backend = [this](std::unique_ptr<Backend> inner) {
        auto backend = std::make_unique<FullRowBackend>(std::move(inner));
        plain_backend_ = backend.get();
        return backend;
      };
    }
    absl::StatusOr<std::unique_ptr<Engine>> engine = testing::LoadEngine(options);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  // Runs `request` on both engines; the answers must be the same bytes.
  void ExpectSameAnswers(const v1::RunRequest& request, const std::string& what) {
    absl::StatusOr<v1::RunResponse> fused = RunSync(*fused_, request);
    absl::StatusOr<v1::RunResponse> plain = RunSync(*plain_, request);
    ASSERT_TRUE(fused.ok()) << what << ": " << fused.status();
    ASSERT_TRUE(plain.ok()) << what << ": " << plain.status();
    ASSERT_EQ(fused->results_size(), plain->results_size()) << what;
    for (int i = 0; i < fused->results_size(); ++i) {
      const v1::RunResult& a = fused->results(i);
      const v1::RunResult& b = plain->results(i);
      EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString())
          << what << ", item " << i << "\nfused: " << a.ShortDebugString()
          << "\nplain: " << b.ShortDebugString();
      for (const v1::StepResult& step : a.steps()) ++strategies_[step.strategy()];
    }
  }

  std::unique_ptr<testing::TempModel> model_;
  std::unique_ptr<Engine> fused_, plain_;
  FullRowBackend* plain_backend_ = nullptr;
  std::map<int, int> strategies_;  // Steps seen per v1::Strategy.
};

TEST_P(EngineReductionTest, ReducedRowsGrowTheTreesFullRowsGrow) {
  uint64_t next_id = 1;
  for (Pin pin : {Pin::kArgmax, Pin::kInsert, Pin::kBranch, Pin::kBackspace, Pin::kAdaptive,
                  Pin::kRandom, Pin::kRandom, Pin::kRandom}) {
    v1::RunRequest request;
    for (uint32_t seed = 0; seed < 12; ++seed) {
      *request.add_items() = BatteryItem(next_id++, seed * 31 + static_cast<uint32_t>(pin), pin);
    }
    ExpectSameAnswers(request, absl::StrCat("pin ", static_cast<int>(pin)));
  }
  v1::RunRequest scoring;
  for (uint32_t seed = 0; seed < 8; ++seed) *scoring.add_items() = ScoringItem(next_id++, seed);
  ExpectSameAnswers(scoring, "scoring");
  ASSERT_NE(plain_backend_, nullptr);
  EXPECT_GT(plain_backend_->forwards(), 0);  // The plain engine really went through it.
  // Every strategy of the matrix was taken, as a token or as a structural stop.
  for (v1::Strategy strategy :
       {v1::STRATEGY_ARGMAX, v1::STRATEGY_ADAPTIVE, v1::STRATEGY_INSERT, v1::STRATEGY_BRANCH,
        v1::STRATEGY_BACKSPACE, v1::STRATEGY_HOT_SAMPLE, v1::STRATEGY_BRANCH_SAMPLE,
        v1::STRATEGY_RESAMPLE}) {
    EXPECT_GT(strategies_[strategy], 0) << v1::Strategy_Name(strategy);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineReductionTest, ::testing::Values("tiny", "small"));

}  // namespace
}  // namespace arbor::worker
