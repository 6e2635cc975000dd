// The CPU backend's Llama forward: tensor by tensor against an independent float64 forward on
// random in-memory models (f32 and bf16, tied and untied, Llama and Qwen2 — q/k/v biases —,
// paged with block sizes 3 and 16);
// batched steps equal unbatched ones; prefix-cache hits, fork and truncate give the logits of a
// cold recompute; bad input is refused with the row and field named.
#include "worker/backend/cpu_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/support/test_seed.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/kv/kv_cache.h"

namespace arbor::worker {
namespace {

using testing::RandomLlama;
using testing::TinyConfig;

std::vector<int32_t> RandomTokens(std::mt19937& rng, int n, int vocab) {
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
  return t;
}

std::unique_ptr<CpuBackend> MakeBackend(const RandomLlama& model, int32_t block_size,
                                        int threads = 2, KvDtype kv_dtype = KvDtype::kF32) {
  auto backend = CpuBackend::Create(
      model.config(), model.Lookup(),
      {.kv_blocks = 256, .block_size = block_size, .threads = threads, .kv_dtype = kv_dtype});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return std::move(backend).value();
}

struct StepResult {
  std::vector<float> logits;
  std::vector<float> scores;
  int32_t hit = 0;
};

// Appends `tokens` to sequence `id` in the cache and computes what the prefix tree did not
// provide, asking for the last token's logits and last-layer scores.
StepResult Step(Backend& backend, KvCache& kv, SeqId id, const std::vector<int32_t>& tokens,
                const TensorTap& tap = {}) {
  StepResult r;
  auto hit = kv.Append(id, tokens);
  EXPECT_TRUE(hit.ok()) << hit.status();
  r.hit = *hit;
  const KvSequence* seq = *kv.Find(id);
  const int32_t len = static_cast<int32_t>(seq->tokens.size());
  const int32_t n = static_cast<int32_t>(tokens.size()) - r.hit;
  r.logits.resize(backend.config().vocab_size);
  r.scores.resize(int64_t{backend.config().num_heads} * len);
  ForwardRow row{.tokens = std::span<const int32_t>(tokens).subspan(r.hit),
                 .start_pos = len - n,
                 .block_table = seq->blocks,
                 .logits = r.logits.data(),
                 .last_scores = r.scores.data()};
  const absl::Status status = backend.Forward({&row, 1}, tap);
  EXPECT_TRUE(status.ok()) << status;
  return r;
}

// Logits of a cold computation of `tokens` on a fresh backend.
std::vector<float> Cold(const RandomLlama& model, const std::vector<int32_t>& tokens,
                        KvDtype kv_dtype = KvDtype::kF32) {
  std::unique_ptr<CpuBackend> backend = MakeBackend(model, 16, 2, kv_dtype);
  KvCache kv(backend.get());
  EXPECT_TRUE(kv.Create(0).ok());
  return Step(*backend, kv, 0, tokens).logits;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, std::abs(double{a[i]} - b[i]));
  return m;
}

void ExpectClose(const std::string& what, const float* got, const double* want, int64_t n,
                 double tol) {
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " [" << i << "]";
  }
}

struct Variant {
  bool bf16;
  bool tied;
  int32_t block_size;
  model::Architecture architecture = model::Architecture::kLlama;
  int head_dim = 16;  // TinyConfig's is hidden / heads; Qwen3's need not be.
};

TEST(CpuBackend, MatchesFloat64TensorByTensor) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  constexpr model::Architecture kQwen2 = model::Architecture::kQwen2;
  constexpr model::Architecture kQwen3 = model::Architecture::kQwen3;
  for (const Variant v :
       {Variant{false, false, 16}, Variant{true, true, 3}, Variant{true, false, 16},
        Variant{false, true, 16, kQwen2}, Variant{true, false, 3, kQwen2},
        Variant{false, true, 16, kQwen3, 24}, Variant{true, false, 3, kQwen3}}) {
    SCOPED_TRACE(::testing::Message()
                 << "bf16 " << v.bf16 << " tied " << v.tied << " block " << v.block_size << " "
                 << model::Describe(v.architecture).name << " head_dim " << v.head_dim);
    model::ModelConfig config = TinyConfig();
    config.tie_word_embeddings = v.tied;
    config.architecture = v.architecture;
    config.head_dim = v.head_dim;
    const RandomLlama model(config, v.bf16, rng);
    std::unique_ptr<CpuBackend> backend = MakeBackend(model, v.block_size);
    KvCache kv(backend.get());
    ASSERT_TRUE(kv.Create(1).ok());
    std::vector<int32_t> tokens = RandomTokens(rng, 37, config.vocab_size);
    std::map<std::string, std::vector<float>> taps;
    const StepResult prefill = Step(
        *backend, kv, 1, tokens, [&](std::string_view name, const float* d, int64_t r, int64_t c) {
          taps[std::string(name)].assign(d, d + r * c);
        });
    const testing::Float64Forward want = testing::ForwardFloat64(model, tokens);
    EXPECT_EQ(taps.size(), want.tensors.size());
    for (const auto& [name, values] : want.tensors) {
      if (name == "logits") continue;
      ASSERT_TRUE(taps.contains(name)) << name;
      ASSERT_EQ(taps[name].size(), values.size()) << name;
      ExpectClose(name, taps[name].data(), values.data(), values.size(), 1e-4);
    }
    const std::vector<double>& logits = want.tensors.at("logits");
    const int64_t vocab = config.vocab_size;
    ExpectClose("prefill logits", prefill.logits.data(),
                logits.data() + (tokens.size() - 1) * vocab, vocab, 1e-4);
    ExpectClose("prefill scores", prefill.scores.data(), want.last_scores.data(),
                want.last_scores.size(), 1e-4);
    // Decode steps continue from the paged cache.
    for (int step = 0; step < 3; ++step) {
      const int32_t next = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
      tokens.push_back(next);
      const StepResult decode = Step(*backend, kv, 1, {next});
      const testing::Float64Forward w = testing::ForwardFloat64(model, tokens);
      ExpectClose("decode logits", decode.logits.data(),
                  w.tensors.at("logits").data() + (tokens.size() - 1) * vocab, vocab, 1e-4);
      ExpectClose("decode scores", decode.scores.data(), w.last_scores.data(), w.last_scores.size(),
                  1e-4);
    }
  }
}

TEST(CpuBackend, BatchedEqualsUnbatched) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const RandomLlama model(TinyConfig(), /*bf16=*/true, rng);
  const int vocab = model.config().vocab_size;
  const std::vector<std::vector<int32_t>> prompts = {
      RandomTokens(rng, 20, vocab), RandomTokens(rng, 5, vocab), RandomTokens(rng, 33, vocab)};
  const std::vector<int32_t> next = RandomTokens(rng, 3, vocab);

  // Batched: all prompts in one step, then one decode step for all.
  std::unique_ptr<CpuBackend> backend = MakeBackend(model, 16, 3);
  KvCache kv(backend.get());
  std::vector<std::vector<float>> batched(6, std::vector<float>(vocab));
  for (int phase = 0; phase < 2; ++phase) {
    std::vector<ForwardRow> rows;
    std::vector<std::vector<int32_t>> step_tokens(3);
    for (int s = 0; s < 3; ++s) {
      if (phase == 0) {
        ASSERT_TRUE(kv.Create(s).ok());
      }
      step_tokens[s] = phase == 0 ? prompts[s] : std::vector<int32_t>{next[s]};
      ASSERT_EQ(*kv.Append(s, step_tokens[s]), 0);
    }
    for (int s = 0; s < 3; ++s) {
      const KvSequence* seq = *kv.Find(s);
      rows.push_back({.tokens = step_tokens[s],
                      .start_pos = static_cast<int32_t>(seq->tokens.size() - step_tokens[s].size()),
                      .block_table = seq->blocks,
                      .logits = batched[phase * 3 + s].data()});
    }
    ASSERT_TRUE(backend->Forward(rows).ok());
  }
  // Unbatched, one sequence at a time on a fresh backend.
  for (int s = 0; s < 3; ++s) {
    std::unique_ptr<CpuBackend> alone = MakeBackend(model, 16, 1);
    KvCache kv1(alone.get());
    ASSERT_TRUE(kv1.Create(0).ok());
    EXPECT_LE(MaxAbsDiff(Step(*alone, kv1, 0, prompts[s]).logits, batched[s]), 1e-5) << s;
    EXPECT_LE(MaxAbsDiff(Step(*alone, kv1, 0, {next[s]}).logits, batched[3 + s]), 1e-5) << s;
  }
}

// Both KV dtypes. With bf16 KV a cache hit reads K/V rounded from another step's computation
// (a different batch shape), so one rounding may land on the other side: 2e-3 on these logits
// (|logit| ≲ 3) instead of f32's 1e-5.
class CpuBackendKv : public ::testing::TestWithParam<KvDtype> {};

TEST_P(CpuBackendKv, PrefixHitForkAndTruncateEqualColdRecompute) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const RandomLlama model(TinyConfig(), /*bf16=*/false, rng);
  const int vocab = model.config().vocab_size;
  const KvDtype dtype = GetParam();
  const double tolerance = dtype == KvDtype::kBF16 ? 2e-3 : 1e-5;
  auto cold = [&](const std::vector<int32_t>& tokens) { return Cold(model, tokens, dtype); };
  std::unique_ptr<CpuBackend> backend = MakeBackend(model, 16, 2, dtype);
  KvCache kv(backend.get());
  const std::vector<int32_t> prompt = RandomTokens(rng, 40, vocab);
  ASSERT_TRUE(kv.Create(1).ok());
  Step(*backend, kv, 1, prompt);

  // A second prompt sharing 35 tokens: its first two blocks (32 tokens) come from the tree.
  std::vector<int32_t> second(prompt.begin(), prompt.begin() + 35);
  for (int32_t t : RandomTokens(rng, 10, vocab)) second.push_back(t);
  ASSERT_TRUE(kv.Create(2).ok());
  const StepResult hit = Step(*backend, kv, 2, second);
  EXPECT_EQ(hit.hit, 32);
  EXPECT_LE(MaxAbsDiff(hit.logits, cold(second)), tolerance);

  // Fork inside a block (copy-on-write of the partial block), then diverge both.
  ASSERT_TRUE(kv.Fork(1, 3, 21).ok());
  std::vector<int32_t> forked(prompt.begin(), prompt.begin() + 21);
  const std::vector<int32_t> branch = RandomTokens(rng, 3, vocab);
  forked.insert(forked.end(), branch.begin(), branch.end());
  EXPECT_LE(MaxAbsDiff(Step(*backend, kv, 3, branch).logits, cold(forked)), tolerance);
  std::vector<int32_t> parent = prompt;
  parent.push_back(7);
  EXPECT_LE(MaxAbsDiff(Step(*backend, kv, 1, {7}).logits, cold(parent)), tolerance);

  // Truncate into a block shared with the fork (copied), then append (backspace + redraw).
  ASSERT_TRUE(kv.Truncate(1, 18).ok());
  parent.resize(18);
  parent.insert(parent.end(), {11, 12});
  EXPECT_LE(MaxAbsDiff(Step(*backend, kv, 1, {11, 12}).logits, cold(parent)), tolerance);
  // The fork still sees its own, untouched prefix.
  forked.push_back(5);
  EXPECT_LE(MaxAbsDiff(Step(*backend, kv, 3, {5}).logits, cold(forked)), tolerance);
  for (SeqId id : {1, 2, 3}) ASSERT_TRUE(kv.Release(id).ok());
  EXPECT_EQ(kv.stats().used_blocks, 0);
  EXPECT_TRUE(kv.blocks().CheckInvariants().ok());
}

INSTANTIATE_TEST_SUITE_P(F32AndBf16, CpuBackendKv, ::testing::Values(KvDtype::kF32, KvDtype::kBF16),
                         [](const auto& info) {
                           return info.param == KvDtype::kBF16 ? "bf16" : "f32";
                         });

// bf16 KV against f32 KV on the same prompt: the only difference is K/V rounded to bf16 (8
// significant bits), which moved these logits by at most 0.036 over 100 seeds.
TEST(CpuBackend, Bf16KvStaysCloseToF32Kv) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const RandomLlama model(TinyConfig(), /*bf16=*/true, rng);
  const std::vector<int32_t> prompt = RandomTokens(rng, 200, model.config().vocab_size);
  const double diff = MaxAbsDiff(Cold(model, prompt, KvDtype::kBF16), Cold(model, prompt));
  std::cout << "max |logit(bf16 KV) - logit(f32 KV)| = " << diff << "\n";
  EXPECT_LE(diff, 1e-1);
  EXPECT_GT(diff, 0.0) << "bf16 KV must actually be stored as bf16";
}

TEST(CpuBackend, RefusesBadInputNamingTheField) {
  std::mt19937 rng(1);
  const RandomLlama model(TinyConfig(), false, rng);
  std::unique_ptr<CpuBackend> backend = MakeBackend(model, 4);
  const std::vector<int32_t> tokens = {1, 2, 512};
  const std::vector<int32_t> table = {0};
  ForwardRow row{.tokens = tokens, .start_pos = 0, .block_table = table};
  absl::Status s = backend->Forward({&row, 1});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tokens[2] = 512"), std::string::npos) << s;
  const std::vector<int32_t> ok_tokens = {1, 2, 3, 4, 5};
  row.tokens = ok_tokens;
  s = backend->Forward({&row, 1});
  EXPECT_NE(s.message().find("block_table has 1"), std::string::npos) << s;
  const std::vector<int32_t> bad_table = {0, 256};
  row.block_table = bad_table;
  s = backend->Forward({&row, 1});
  EXPECT_NE(s.message().find("block_table[1] = 256"), std::string::npos) << s;
  row.tokens = {};
  EXPECT_EQ(backend->Forward({&row, 1}).code(), absl::StatusCode::kInvalidArgument);

  // Block copies are all checked before any is performed.
  for (const BlockCopy& bad : {BlockCopy{0, 256, 1}, BlockCopy{-1, 1, 1}, BlockCopy{0, 1, 5}}) {
    const std::vector<BlockCopy> copies = {{1, 2, 4}, bad};
    s = backend->CopyKvBlocks(copies);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("KV block copy"), std::string::npos) << s;
  }

  const TensorLookup good = model.Lookup();
  auto missing = CpuBackend::Create(
      model.config(),
      [&](const std::string& name) {
        if (name == "model.layers.1.mlp.up_proj.weight")
          return absl::StatusOr<model::TensorView>(absl::NotFoundError("no tensor " + name));
        return good(name);
      },
      {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("up_proj"), std::string::npos);
  auto misshaped =
      CpuBackend::Create(model.config(),
                         [&](const std::string& name) {
                           auto t = good(name);
                           if (t.ok() && name == "model.layers.0.self_attn.k_proj.weight")
                             t->shape = {16, 128};
                           return t;
                         },
                         {});
  EXPECT_EQ(misshaped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(misshaped.status().message().find("k_proj.weight: shape [16, 128], expected [32, 64]"),
            std::string::npos)
      << misshaped.status();
}

}  // namespace
}  // namespace arbor::worker
