// Logit metrics against closed forms and a float64 two-pass reference (the definition of
// docs/ARCHITECTURE.md §4.1 evaluated directly), on fresh random rows up to the Llama-3 vocabulary.
#include "entropix/logit_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/bf16.h"
#include "base/softmax_moments.h"
#include "tests/support/test_seed.h"

namespace arbor::entropix {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int kLlama3Vocab = 128256;

struct Reference {
  double entropy, varentropy, logsumexp;
};

// H = −Σ p·lp / ln2 and V = Σ p·(lp/ln2 + H)², two passes in float64; −inf entries have p = 0.
Reference TwoPass(const std::vector<float>& x) {
  double max = -kInf;
  for (float v : x) max = std::max<double>(max, v);
  double sum = 0.0;
  for (float v : x) sum += std::exp(v - max);
  const double lse = max + std::log(sum);
  double h = 0.0;
  for (float v : x) {
    if (v == -kInf) continue;
    const double lp = v - lse;
    h -= std::exp(lp) * lp / std::log(2.0);
  }
  double var = 0.0;
  for (float v : x) {
    if (v == -kInf) continue;
    const double lp = v - lse;
    const double dev = lp / std::log(2.0) + h;
    var += std::exp(lp) * dev * dev;
  }
  return {h, var, lse};
}

// Logits whose softmax is exactly `probs` (up to float rounding of the logs).
std::vector<float> LogitsOf(const std::vector<double>& probs, double offset = 0.0) {
  std::vector<float> x;
  for (double p : probs) x.push_back(static_cast<float>(std::log(p) + offset));
  return x;
}

void ExpectMatches(const LogitMetrics& got, const Reference& want, double tol) {
  EXPECT_NEAR(got.entropy, want.entropy, tol * (1.0 + want.entropy));
  EXPECT_NEAR(got.varentropy, want.varentropy, 10 * tol * (1.0 + want.varentropy));
  EXPECT_NEAR(got.logsumexp, want.logsumexp, tol * (1.0 + std::abs(want.logsumexp)));
}

TEST(LogitMetrics, UniformHasEntropyLog2NAndNoVarentropy) {
  for (int n : {1, 2, 7, 1000, kLlama3Vocab}) {
    for (float offset : {0.0f, -1e4f, 3e4f, 3e38f}) {
      std::vector<float> x(n, offset);
      auto m = ComputeLogitMetrics(x.data(), n, 1);
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_NEAR(m->entropy, std::log2(n), 1e-5 * (1 + std::log2(n))) << n << " " << offset;
      EXPECT_EQ(m->varentropy, 0.0f) << n << " " << offset;
      EXPECT_EQ(m->max_logit, offset);
      ASSERT_EQ(m->top_k.size(), 1u);
      EXPECT_EQ(m->top_k[0].id, 0);  // All tied: lowest id.
      // log n is below the resolution of a float near 3e38, so only check moderate offsets.
      if (std::abs(offset) < 1e6f) {
        EXPECT_NEAR(m->top_k[0].logprob, -std::log(n), 1e-5 * (1 + std::log(n)));
      }
    }
  }
}

TEST(LogitMetrics, TwoPointClosedForm) {
  for (double p : {0.5, 0.9, 0.99, 0.999, 1e-6}) {
    const double q = 1.0 - p;
    const double h = -(p * std::log2(p) + q * std::log2(q));
    const double v = p * q * std::pow(std::log2(p / q), 2);
    const std::vector<float> x = LogitsOf({p, q}, 12.5);
    auto m = ComputeLogitMetrics(x.data(), 2, 2);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_NEAR(m->entropy, h, 1e-5) << p;
    EXPECT_NEAR(m->varentropy, v, 1e-4 * (1 + v)) << p;
  }
  // The seed documents' example: p = 0.99/0.01 is confident (H ≈ 0.0808) yet V ≈ 0.435 > 0.1.
  const std::vector<float> x = LogitsOf({0.99, 0.01});
  auto m = ComputeLogitMetrics(x.data(), 2, 0);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->entropy, 0.080793, 1e-5);
  EXPECT_NEAR(m->varentropy, 0.43510, 1e-4);
  EXPECT_TRUE(m->top_k.empty());
}

TEST(LogitMetrics, SeedDocumentDistribution) {
  // 8 × 0.12 + 0.03 + 0.01.
  std::vector<double> probs(8, 0.12);
  probs.push_back(0.03);
  probs.push_back(0.01);
  double h = 0.0, v = 0.0;
  for (double p : probs) h -= p * std::log2(p);
  for (double p : probs) v += p * std::pow(std::log2(p) + h, 2);
  const std::vector<float> x = LogitsOf(probs, -7.0);
  auto m = ComputeLogitMetrics(x.data(), x.size(), 10);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->entropy, h, 1e-5);
  EXPECT_NEAR(m->varentropy, v, 1e-4);
  EXPECT_NEAR(m->logsumexp, -7.0, 1e-5);
  ASSERT_EQ(m->top_k.size(), 10u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(m->top_k[i].id, i);  // Ties resolved by id.
  EXPECT_EQ(m->top_k[8].id, 8);
  EXPECT_NEAR(m->top_k[9].logprob, std::log(0.01), 1e-5);
}

TEST(LogitMetrics, OneHotWithMinusInfinity) {
  std::vector<float> x(kLlama3Vocab, -kInf);
  x[4242] = 17.0f;
  auto m = ComputeLogitMetrics(x.data(), x.size(), 3);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->entropy, 0.0f);
  EXPECT_EQ(m->varentropy, 0.0f);
  EXPECT_EQ(m->logsumexp, 17.0f);
  EXPECT_EQ(m->top_k[0].id, 4242);
  EXPECT_EQ(m->top_k[0].logprob, 0.0f);
  EXPECT_EQ(m->top_k[1].logprob, -kInf);
}

TEST(LogitMetrics, ExtremeSpreadAcrossChunks) {
  // Chunks whose maxima are ~6e38 apart: the smaller chunk's weight underflows to exactly 0.
  std::vector<float> x(5000, -3e38f);
  x[4500] = 3e38f;
  x[4501] = 3e38f;
  auto m = ComputeLogitMetrics(x.data(), x.size(), 2);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_NEAR(m->entropy, 1.0, 1e-6);
  EXPECT_EQ(m->varentropy, 0.0f);
  EXPECT_EQ(m->top_k[0].id, 4500);
  EXPECT_EQ(m->top_k[1].id, 4501);
}

TEST(LogitMetrics, RandomRowsMatchFloat64) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 6; ++trial) {
    const int n = trial < 3 ? kLlama3Vocab : 1 + static_cast<int>(rng() % 5000);
    const float scale = std::array<float, 3>{0.5f, 3.0f, 12.0f}[trial % 3];
    const float offset = std::uniform_real_distribution<float>(-2e4f, 2e4f)(rng);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> x(n);
    for (float& v : x) v = offset + normal(rng);
    for (int i = 0; i < n / 10; ++i) x[rng() % n] = -kInf;  // Masked tokens.
    x[rng() % n] = offset + 5 * scale;                      // At least one finite maximum.
    const int k = std::min(n, 64);
    auto m = ComputeLogitMetrics(x.data(), n, k);
    ASSERT_TRUE(m.ok()) << m.status();
    SCOPED_TRACE(testing::Message() << "n " << n << " scale " << scale << " offset " << offset);
    ExpectMatches(*m, TwoPass(x), 2e-5);
    // Top-K: the k largest by a full sort.
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return x[a] > x[b]; });
    const double lse = TwoPass(x).logsumexp;
    ASSERT_EQ(m->top_k.size(), static_cast<size_t>(k));
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(m->top_k[i].id, order[i]) << i;
      if (x[order[i]] == -kInf) {
        EXPECT_EQ(m->top_k[i].logprob, -kInf) << i;
        continue;
      }
      EXPECT_NEAR(m->top_k[i].logprob, x[order[i]] - lse, 2e-3) << i;  // fp32 at |x| ~ 2e4.
    }
  }
}

TEST(LogitMetrics, LargeTopKUsesTheSameOrder) {
  std::vector<float> x = {3, 1, 3, 2, 2, 0};
  auto m = ComputeLogitMetrics(x.data(), x.size(), 6);
  ASSERT_TRUE(m.ok());
  const std::vector<int> want = {0, 2, 3, 4, 1, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(m->top_k[i].id, want[i]);
}

TEST(LogitMetrics, Bf16RowEqualsItsWidenedFloatRow) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<uint16_t> bf(kLlama3Vocab);
  std::vector<float> wide(kLlama3Vocab);
  for (int i = 0; i < kLlama3Vocab; ++i) {
    bf[i] = base::FloatToBf16(normal(rng));
    wide[i] = base::Bf16ToFloat(bf[i]);
  }
  auto a = ComputeLogitMetrics(bf.data(), kLlama3Vocab, 20);
  auto b = ComputeLogitMetrics(wide.data(), kLlama3Vocab, 20);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->entropy, b->entropy);
  EXPECT_EQ(a->varentropy, b->varentropy);
  EXPECT_EQ(a->logsumexp, b->logsumexp);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a->top_k[i].id, b->top_k[i].id);
}

TEST(LogitMetrics, ChunkedMomentsMergeInAnyOrder) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 6.0f);
  std::vector<float> x(50000);
  for (float& v : x) v = normal(rng);
  base::SoftmaxMoments whole;
  whole.AddChunk(x.data(), x.size());
  std::vector<base::SoftmaxMoments> parts;
  for (size_t start = 0; start < x.size();) {
    const size_t len = std::min<size_t>(1 + rng() % 3000, x.size() - start);
    parts.emplace_back().AddChunk(x.data() + start, len);
    start += len;
  }
  std::shuffle(parts.begin(), parts.end(), rng);
  // Each chunk shifts by its own maximum in float32 arithmetic, hence a 1e-7 relative tolerance.
  base::SoftmaxMoments merged;
  for (const base::SoftmaxMoments& p : parts) merged.Merge(p);
  EXPECT_NEAR(merged.LogSumExp(), whole.LogSumExp(), 1e-7 * std::abs(whole.LogSumExp()));
  EXPECT_NEAR(merged.EntropyNats(), whole.EntropyNats(), 1e-7 * whole.EntropyNats());
  EXPECT_NEAR(merged.VarentropyNats(), whole.VarentropyNats(), 1e-6 * whole.VarentropyNats());
  auto finished = FinishLogitMetrics(merged);
  ASSERT_TRUE(finished.ok());
  ExpectMatches(*finished, TwoPass(x), 2e-5);
}

TEST(LogitMetrics, BadInputIsAnErrorNamingTheEntry) {
  std::vector<float> x = {0.0f, 1.0f, NAN, 2.0f};
  auto nan = ComputeLogitMetrics(x.data(), x.size(), 1);
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nan.status().message().find("logits[2]"), absl::string_view::npos) << nan.status();
  x[2] = kInf;
  EXPECT_NE(ComputeLogitMetrics(x.data(), x.size(), 1).status().message().find("logits[2]"),
            absl::string_view::npos);
  std::vector<float> masked(10, -kInf);
  EXPECT_FALSE(ComputeLogitMetrics(masked.data(), masked.size(), 1).ok());
  EXPECT_FALSE(ComputeLogitMetrics(x.data(), 0, 0).ok());
  x[2] = 0.0f;
  auto too_many = ComputeLogitMetrics(x.data(), x.size(), 5);
  EXPECT_NE(too_many.status().message().find("top_k: 5 is outside [0, 4]"), absl::string_view::npos)
      << too_many.status();
  EXPECT_FALSE(FinishLogitMetrics(base::SoftmaxMoments{}).ok());
  const uint16_t bf_nan = 0x7fc0;
  EXPECT_FALSE(ComputeLogitMetrics(&bf_nan, 1, 1).ok());
}

// The summary of one row shared among parts, run in reverse order or each on its own thread, is
// the unshared one bit for bit: ties, masked tokens and masked whole chunks, a probe, small and
// large k, more parts than chunks, and the first bad entry wherever the parts fall.
TEST(LogitMetrics, ASharedRowSummarizesToTheSameBits) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const RowSplit reversed{.parts = 0, .run = [](int parts, const std::function<void(int)>& fn) {
                            for (int p = parts - 1; p >= 0; --p) fn(p);
                          }};
  const RowSplit threads{.parts = 0, .run = [](int parts, const std::function<void(int)>& fn) {
                           std::vector<std::thread> running;
                           for (int p = 0; p < parts; ++p) running.emplace_back(fn, p);
                           for (std::thread& t : running) t.join();
                         }};
  for (int trial = 0; trial < 8; ++trial) {
    const int n = trial < 2 ? kLlama3Vocab : 1 + static_cast<int>(rng() % 20000);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    std::vector<float> x(n);
    // Rounded to quarters, so that many logits tie.
    for (float& v : x) v = std::round(4.0f * normal(rng)) / 4.0f;
    for (int i = 0; i < n / 8; ++i) x[rng() % n] = -kInf;
    std::fill(x.begin(), x.begin() + std::min(n, 2048), -kInf);  // A chunk all masked.
    x[n - 1] = 1.0f;
    const int k = std::array<int, 4>{0, 1, 20, n}[trial % 4];
    const int probe = trial % 2 == 0 ? -1 : static_cast<int>(rng() % n);
    SCOPED_TRACE(testing::Message() << "n " << n << " k " << k << " probe " << probe);
    auto want = SummarizeLogits(x.data(), n, k, probe);
    ASSERT_TRUE(want.ok()) << want.status();
    for (int parts = 1; parts <= 7; parts += 2) {
      for (RowSplit split : {reversed, threads}) {
        split.parts = parts;
        auto got = SummarizeLogits(x.data(), n, k, probe, split);
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_EQ(got->metrics.entropy, want->metrics.entropy) << parts;
        EXPECT_EQ(got->metrics.varentropy, want->metrics.varentropy) << parts;
        EXPECT_EQ(got->metrics.max_logit, want->metrics.max_logit) << parts;
        EXPECT_EQ(got->logsumexp, want->logsumexp) << parts;
        EXPECT_EQ(got->probe_logit, want->probe_logit) << parts;
        EXPECT_EQ(got->probe_rank, want->probe_rank) << parts;
        ASSERT_EQ(got->best.size(), want->best.size()) << parts;
        for (size_t i = 0; i < got->best.size(); ++i) {
          EXPECT_EQ(got->best[i].index, want->best[i].index) << parts << " " << i;
          EXPECT_EQ(got->best[i].value, want->best[i].value) << parts << " " << i;
        }
      }
    }
    // Two bad entries: the error names the first, however the row is shared.
    const int first = static_cast<int>(rng() % n), second = std::min(n - 1, first + 3000);
    x[second] = kInf;
    x[first] = NAN;
    const std::string message(SummarizeLogits(x.data(), n, k, probe).status().message());
    EXPECT_NE(message.find("logits[" + std::to_string(first) + "]"), std::string::npos);
    for (int parts = 2; parts <= 7; parts += 5) {
      RowSplit split = threads;
      split.parts = parts;
      EXPECT_EQ(SummarizeLogits(x.data(), n, k, probe, split).status().message(), message);
    }
  }
}

// The vectorised row scans over every length around the vector width, each bad value at each
// position (whole vectors and the tail).
TEST(RowScans, FindNonFiniteAndMaxOfAtEveryPosition) {
  EXPECT_EQ(base::MaxOf(nullptr, 0), -kInf);
  EXPECT_EQ(base::FindNonFinite(nullptr, 0), -1);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 5.0f);
  for (int n = 1; n <= 40; ++n) {
    std::vector<float> x(n);
    for (float& v : x) v = rng() % 4 == 0 ? -kInf : normal(rng);
    EXPECT_EQ(base::MaxOf(x.data(), n), *std::max_element(x.begin(), x.end())) << n;
    EXPECT_EQ(base::FindNonFinite(x.data(), n), -1) << n;
    for (int at = 0; at < n; ++at) {
      for (float bad : {kInf, std::numeric_limits<float>::quiet_NaN()}) {
        std::vector<float> y = x;
        y[at] = bad;
        if (at + 1 < n) y[n - 1] = bad;  // The first one is reported.
        EXPECT_EQ(base::FindNonFinite(y.data(), n), at) << n << " " << at;
      }
    }
  }
}

}  // namespace
}  // namespace arbor::entropix
