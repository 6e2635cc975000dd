// The CUDA backend against the CPU backend on random in-memory Llamas (bf16 weights, untied
// Llamas, tied Qwen2s and tied Qwen3s, block sizes 3 and 16): every TensorTap intermediate of a
// prefill, then mixed steps of prefill chunks and decode rows (logits and last-layer scores), fork
// copies, and refused input. Also: a backend driven from a thread other than the creating one
// (whose current device is another) still runs on its own device, a sticky error (an illegal
// address) makes the backend report itself unusable, and the device's row reductions equal the
// host's on the same rows. Decode steps replayed from CUDA graphs equal eager ones bit for bit.
// Skips without a device. Tolerance: the GEMMs of many rows read bf16 activations where the CPU
// keeps fp32, so intermediates differ by bf16 rounding (relative ~1e-3 per matmul), not by fp32
// rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kernels/cuda/cuda_status.h"
#include "tests/support/test_seed.h"
#include "tests/worker/backend/fault_kernel.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cpu_backend.h"
#include "worker/backend/cuda_backend.h"

namespace arbor::worker {
namespace {

using testing::RandomLlama;

constexpr double kTolerance = 2e-2;  // ‖cuda − cpu‖ / ‖cpu‖ per tensor.

#define SKIP_WITHOUT_DEVICE() \
  if (kernels::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine"

double RelativeError(const float* got, const float* want, int64_t n) {
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(got[i])) return INFINITY;
    err += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    norm += double{want[i]} * want[i];
  }
  return std::sqrt(err / std::max(norm, 1e-30));
}

struct Pair {
  std::unique_ptr<CpuBackend> cpu;
  std::unique_ptr<CudaBackend> cuda;
};

// Both backends with the same KV dtype: each rounds its own K/V the same way.
Pair MakePair(const RandomLlama& model, int32_t block_size, KvDtype kv_dtype = KvDtype::kF32,
              bool invariant = true) {
  Pair p;
  auto cpu = CpuBackend::Create(
      model.config(), model.Lookup(),
      {.kv_blocks = 512, .block_size = block_size, .threads = 2, .kv_dtype = kv_dtype});
  auto cuda = CudaBackend::Create(model.config(), model.Lookup(),
                                  {.device = 0,
                                   .kv_blocks = 512,
                                   .block_size = block_size,
                                   .kv_dtype = kv_dtype,
                                   .batch_invariant = invariant});
  EXPECT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_TRUE(cuda.ok()) << cuda.status();
  if (cpu.ok()) p.cpu = std::move(cpu).value();
  if (cuda.ok()) p.cuda = std::move(cuda).value();
  return p;
}

std::vector<int32_t> Tokens(std::mt19937& rng, int n, int vocab) {
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
  return t;
}

// A table of distinct blocks for a sequence of `len` tokens starting at block `first`.
std::vector<int32_t> Table(int32_t first, int64_t len, int32_t block_size) {
  std::vector<int32_t> t((len + block_size - 1) / block_size);
  for (size_t i = 0; i < t.size(); ++i) t[i] = first + static_cast<int32_t>(i);
  return t;
}

// Block size, architecture (Qwen2 and Qwen3 tied, as their small models are), KV dtype,
// batch-invariant numerics.
class CudaBackendGpu
    : public ::testing::TestWithParam<std::tuple<int32_t, model::Architecture, KvDtype, bool>> {};

TEST_P(CudaBackendGpu, MatchesCpuBackend) {
  SKIP_WITHOUT_DEVICE();
  const auto [block_size, architecture, kv_dtype, invariant] = GetParam();
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  model::ModelConfig config = testing::TinyConfig();
  config.architecture = architecture;
  config.tie_word_embeddings = architecture != model::Architecture::kLlama;
  const RandomLlama model(config, /*bf16=*/true, rng);
  Pair p = MakePair(model, block_size, kv_dtype, invariant);
  ASSERT_NE(p.cuda, nullptr);
  const int vocab = config.vocab_size, heads = config.num_heads;

  // 1. A 37-token prefill, tensor by tensor.
  const std::vector<int32_t> prompt = Tokens(rng, 37, vocab);
  const std::vector<int32_t> table_a = Table(0, 64, block_size);
  std::map<std::string, std::vector<float>> cpu_tensors;
  std::vector<float> cpu_logits(vocab), cuda_logits(vocab);
  std::vector<float> cpu_scores(heads * 37), cuda_scores(heads * 37);
  ForwardRow row{prompt, 0, table_a, nullptr, cpu_logits.data(), cpu_scores.data()};
  ASSERT_TRUE(p.cpu
                  ->Forward({&row, 1},
                            [&](std::string_view name, const float* d, int64_t r, int64_t c) {
                              cpu_tensors[std::string(name)].assign(d, d + r * c);
                            })
                  .ok());
  row.logits = cuda_logits.data();
  row.last_scores = cuda_scores.data();
  int tapped = 0;
  ASSERT_TRUE(p.cuda
                  ->Forward({&row, 1},
                            [&](std::string_view name, const float* d, int64_t r, int64_t c) {
                              ++tapped;
                              const auto& want = cpu_tensors.at(std::string(name));
                              ASSERT_EQ(static_cast<int64_t>(want.size()), r * c) << name;
                              EXPECT_LE(RelativeError(d, want.data(), r * c), kTolerance) << name;
                            })
                  .ok());
  EXPECT_EQ(tapped, static_cast<int>(cpu_tensors.size()));
  EXPECT_LE(RelativeError(cuda_logits.data(), cpu_logits.data(), vocab), kTolerance);
  EXPECT_LE(RelativeError(cuda_scores.data(), cpu_scores.data(), heads * 37), kTolerance);

  // 2. Fork sequence A's first 20 tokens into fresh blocks (copy-on-write of the partial block),
  // then one mixed step: A decodes, B (the fork) extends by 5, C prefills 11.
  const std::vector<int32_t> table_b = Table(100, 64, block_size);
  const int32_t full = 20 / block_size;
  std::vector<int32_t> table_b_shared = table_b;
  for (int32_t i = 0; i < full; ++i) table_b_shared[i] = table_a[i];
  std::vector<BlockCopy> copies;
  if (20 % block_size != 0)
    copies.push_back({table_a[full], table_b_shared[full], 20 % block_size});
  ASSERT_TRUE(p.cpu->CopyKvBlocks(copies).ok());
  ASSERT_TRUE(p.cuda->CopyKvBlocks(copies).ok());
  const std::vector<int32_t> next_a = Tokens(rng, 1, vocab), next_b = Tokens(rng, 5, vocab),
                             prompt_c = Tokens(rng, 11, vocab);
  const std::vector<int32_t> table_c = Table(200, 11, block_size);
  std::vector<std::vector<float>> logits(6, std::vector<float>(vocab));
  // Rows 0–2 for the CPU, 3–5 for CUDA: A's 38 keys, B's 25, C's 11.
  std::vector<std::vector<float>> scores;
  for (int backend = 0; backend < 2; ++backend) {
    for (int keys : {38, 25, 11}) scores.emplace_back(heads * keys);
  }
  for (int backend = 0; backend < 2; ++backend) {
    const int o = backend * 3;
    const ForwardRow step[3] = {
        {next_a, 37, table_a, nullptr, logits[o].data(), scores[o].data()},
        {next_b, 20, table_b_shared, nullptr, logits[o + 1].data(), scores[o + 1].data()},
        {prompt_c, 0, table_c, nullptr, logits[o + 2].data(), scores[o + 2].data()}};
    Backend& b = backend == 0 ? static_cast<Backend&>(*p.cpu) : *p.cuda;
    ASSERT_TRUE(b.Forward(step).ok());
  }
  for (int r = 0; r < 3; ++r) {
    EXPECT_LE(RelativeError(logits[3 + r].data(), logits[r].data(), vocab), kTolerance) << r;
    EXPECT_LE(RelativeError(scores[3 + r].data(), scores[r].data(),
                            static_cast<int64_t>(scores[r].size())),
              kTolerance)
        << r;
  }

  // 3. Bad input is refused before anything runs.
  const std::vector<int32_t> bad = {vocab};
  const ForwardRow bad_row{bad, 0, table_c};
  const absl::Status status = p.cuda->Forward({&bad_row, 1});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("tokens[0]"), std::string::npos) << status;
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, CudaBackendGpu,
                         ::testing::Combine(::testing::Values(3, 16),
                                            ::testing::Values(model::Architecture::kLlama,
                                                              model::Architecture::kQwen2,
                                                              model::Architecture::kQwen3),
                                            ::testing::Values(KvDtype::kF32, KvDtype::kBF16),
                                            ::testing::Bool()));

// The device's reductions against the host's reduction (ReduceRowOnHost) of the very rows the
// same step hands back in full: a prefill row whose attention spans two key chunks, a short one,
// then a decode step of each, in EXACT and REFERENCE modes, with and without a probe, and one
// request wanting more candidates than the device keeps (reduced on the host by the backend).
// Same logits in, so the candidates and the probe's rank must be equal; the metrics differ only
// by the order of double sums (1e-5 relative).
TEST(CudaBackendReductions, EqualTheHostReductionOfTheStepsFullRows) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng(11);
  model::ModelConfig config = testing::TinyConfig();
  config.vocab_size = 5000;  // Three logit chunks.
  const RandomLlama model(config, /*bf16=*/true, rng);
  auto backend = CudaBackend::Create(config, model.Lookup(),
                                     {.device = 0, .kv_blocks = 256, .block_size = 16});
  ASSERT_TRUE(backend.ok()) << backend.status();
  const std::vector<ReductionRequest> requests = {
      {100, 17, entropix::AttentionMode::kExact, 1, {}},
      {1, -1, entropix::AttentionMode::kReference, 4096, {}},
      {2000, 3, entropix::AttentionMode::kReference, 8, {}}};
  const std::vector<int32_t> lengths = {1500, 7, 40};
  std::vector<std::vector<int32_t>> tables, tokens;
  for (size_t s = 0; s < lengths.size(); ++s) {
    tables.push_back(Table(static_cast<int32_t>(s) * 96, lengths[s] + 1, 16));
    tokens.push_back(Tokens(rng, lengths[s], config.vocab_size));
  }
  for (int phase = 0; phase < 2; ++phase) {
    SCOPED_TRACE(phase == 0 ? "prefill" : "decode");
    std::vector<RowReduction> got(requests.size());
    std::vector<std::vector<float>> logits(requests.size()), scores(requests.size());
    std::vector<std::vector<int32_t>> step_tokens(requests.size());
    std::vector<ForwardRow> rows;
    for (size_t s = 0; s < requests.size(); ++s) {
      step_tokens[s] = phase == 0 ? tokens[s] : std::vector<int32_t>{5};
      const int32_t start = phase == 0 ? 0 : lengths[s];
      const int32_t keys = start + static_cast<int32_t>(step_tokens[s].size());
      got[s].request = requests[s];
      logits[s].assign(config.vocab_size, NAN);
      scores[s].assign(static_cast<size_t>(config.num_heads) * keys, NAN);
      rows.push_back(
          {step_tokens[s], start, tables[s], &got[s], logits[s].data(), scores[s].data()});
    }
    const absl::Status status = (*backend)->Forward(rows);
    ASSERT_TRUE(status.ok()) << status;
    for (size_t s = 0; s < requests.size(); ++s) {
      SCOPED_TRACE(::testing::Message() << "row " << s);
      RowReduction want;
      want.request = requests[s];
      ReduceRowOnHost(logits[s], scores[s].data(), config.num_heads,
                      static_cast<int>(scores[s].size()) / config.num_heads, want);
      ASSERT_TRUE(want.status.ok()) << want.status;
      ASSERT_TRUE(got[s].status.ok()) << got[s].status;
      EXPECT_NEAR(got[s].logits.entropy, want.logits.entropy, 1e-5 * (1 + want.logits.entropy));
      EXPECT_NEAR(got[s].logits.varentropy, want.logits.varentropy,
                  1e-5 * (1 + want.logits.varentropy));
      EXPECT_NEAR(got[s].logits.logsumexp, want.logits.logsumexp,
                  1e-6 * (1 + std::abs(want.logits.logsumexp)));
      EXPECT_EQ(got[s].logits.max_logit, want.logits.max_logit);
      EXPECT_EQ(got[s].candidates.ids, want.candidates.ids);
      EXPECT_EQ(got[s].candidates.logits, want.candidates.logits);
      EXPECT_EQ(got[s].probe_logit, want.probe_logit);
      EXPECT_EQ(got[s].probe_rank, want.probe_rank);
      const entropix::AttentionMetrics& a = got[s].attention;
      const entropix::AttentionMetrics& b = want.attention;
      EXPECT_NEAR(a.attn_entropy, b.attn_entropy, 1e-4 * (1 + b.attn_entropy));
      EXPECT_NEAR(a.attn_varentropy, b.attn_varentropy, 1e-4 * (1 + b.attn_varentropy));
      EXPECT_NEAR(a.attn_head_varentropy, b.attn_head_varentropy,
                  1e-4 * (1 + b.attn_head_varentropy));
      EXPECT_NEAR(a.agreement, b.agreement, 1e-5 * (1 + b.agreement));
      EXPECT_NEAR(a.interaction_strength, b.interaction_strength,
                  1e-5 * (1 + b.interaction_strength));
    }
  }
}

// Decode steps replayed from CUDA graphs give the same bits as eager launches: two backends on
// one model, graphs on and off, prefill three sequences, then decode them greedily together —
// through the batch-invariant GEMM, and through the fast path's GEMVs.
class CudaBackendGraphs : public ::testing::TestWithParam<bool> {};

TEST_P(CudaBackendGraphs, ReplayedDecodeStepsEqualEagerOnesBitForBit) {
  SKIP_WITHOUT_DEVICE();
  const bool invariant = GetParam();
  std::mt19937 rng(5);
  const RandomLlama model(testing::TinyConfig(), /*bf16=*/true, rng);
  const int32_t vocab = model.config().vocab_size, heads = model.config().num_heads;
  std::unique_ptr<CudaBackend> backends[2];
  for (bool graphs : {false, true}) {
    auto b = CudaBackend::Create(model.config(), model.Lookup(),
                                 {.device = 0,
                                  .kv_blocks = 64,
                                  .block_size = 16,
                                  .cuda_graphs = graphs,
                                  .batch_invariant = invariant});
    ASSERT_TRUE(b.ok()) << b.status();
    backends[graphs] = std::move(b).value();
  }
  const std::vector<int32_t> lengths = {37, 5, 130};
  std::vector<std::vector<int32_t>> tables, prompts;
  for (size_t s = 0; s < lengths.size(); ++s) {
    tables.push_back(Table(static_cast<int32_t>(s) * 20, lengths[s] + 24, 16));
    prompts.push_back(Tokens(rng, lengths[s], vocab));
  }
  std::vector<int32_t> next(lengths.size());
  for (int step = -1; step < 12; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    std::vector<float> logits[2][3], scores[2][3];
    RowReduction reductions[2][3];
    for (int g = 0; g < 2; ++g) {
      std::vector<ForwardRow> rows;
      for (size_t s = 0; s < lengths.size(); ++s) {
        const bool prefill = step < 0;
        const int32_t start = prefill ? 0 : lengths[s] + step;
        logits[g][s].assign(vocab, NAN);
        scores[g][s].assign(static_cast<size_t>(heads) * (start + (prefill ? lengths[s] : 1)), NAN);
        reductions[g][s].request.candidates = 20;
        rows.push_back(
            {prefill ? std::span<const int32_t>(prompts[s]) : std::span<const int32_t>(&next[s], 1),
             start, tables[s], &reductions[g][s], logits[g][s].data(), scores[g][s].data()});
      }
      const absl::Status status = backends[g]->Forward(rows);
      ASSERT_TRUE(status.ok()) << status;
    }
    for (size_t s = 0; s < lengths.size(); ++s) {
      EXPECT_EQ(std::memcmp(logits[0][s].data(), logits[1][s].data(), vocab * sizeof(float)), 0)
          << "row " << s;
      EXPECT_EQ(std::memcmp(scores[0][s].data(), scores[1][s].data(),
                            scores[0][s].size() * sizeof(float)),
                0)
          << "row " << s;
      EXPECT_EQ(reductions[0][s].logits.entropy, reductions[1][s].logits.entropy);
      EXPECT_EQ(reductions[0][s].candidates.ids, reductions[1][s].candidates.ids);
      next[s] = reductions[0][s].candidates.ids[0];
    }
  }
  EXPECT_EQ(backends[0]->graphs().replays(), 0);
  EXPECT_GE(backends[1]->graphs().captures(), 1);
  EXPECT_GE(backends[1]->graphs().replays(), 10);
}

INSTANTIATE_TEST_SUITE_P(Numerics, CudaBackendGraphs, ::testing::Bool());

// Sibling branches over one prompt (block tables sharing its blocks, as a fork makes them)
// decode with cascade attention as without it: logits and scores within fp32 summation order.
TEST(CudaBackendCascade, SiblingsDecodeAsWithoutCascade) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng(9);
  const RandomLlama model(testing::TinyConfig(), /*bf16=*/true, rng);
  const int32_t vocab = model.config().vocab_size, heads = model.config().num_heads;
  constexpr int32_t kBlock = 16, kPrompt = 6 * kBlock, kSiblings = 6, kOwn = 5;
  std::unique_ptr<CudaBackend> backends[2];
  for (bool cascade : {false, true}) {
    auto b = CudaBackend::Create(model.config(), model.Lookup(),
                                 {.device = 0,
                                  .kv_blocks = 64,
                                  .block_size = kBlock,
                                  .cascade = cascade,
                                  .cascade_min_members = 2,
                                  .batch_invariant = false});
    ASSERT_TRUE(b.ok()) << b.status();
    backends[cascade] = std::move(b).value();
  }
  const std::vector<int32_t> prompt = Tokens(rng, kPrompt, vocab);
  std::vector<std::vector<int32_t>> tables(kSiblings), own(kSiblings);
  for (int32_t s = 0; s < kSiblings; ++s) {
    tables[s] = Table(0, kPrompt, kBlock);  // The prompt's blocks, shared.
    for (int32_t b = 0; b < 2; ++b) tables[s].push_back(6 + s * 2 + b);
    own[s] = Tokens(rng, kOwn, vocab);
  }
  for (int g = 0; g < 2; ++g) {
    const ForwardRow prefill{prompt, 0, tables[0]};
    ASSERT_TRUE(backends[g]->Forward({&prefill, 1}).ok());
    std::vector<ForwardRow> chunks;
    for (int32_t s = 0; s < kSiblings; ++s) chunks.push_back({own[s], kPrompt, tables[s]});
    ASSERT_TRUE(backends[g]->Forward(chunks).ok());
  }
  std::vector<int32_t> next(kSiblings, 3);
  for (int32_t step = 0; step < 4; ++step) {
    std::vector<float> logits[2][kSiblings], scores[2][kSiblings];
    const int32_t start = kPrompt + kOwn + step;
    for (int g = 0; g < 2; ++g) {
      std::vector<ForwardRow> rows;
      for (int32_t s = 0; s < kSiblings; ++s) {
        logits[g][s].assign(vocab, NAN);
        scores[g][s].assign(static_cast<size_t>(heads) * (start + 1), NAN);
        rows.push_back({std::span<const int32_t>(&next[s], 1), start, tables[s], nullptr,
                        logits[g][s].data(), scores[g][s].data()});
      }
      const absl::Status status = backends[g]->Forward(rows);
      ASSERT_TRUE(status.ok()) << status;
    }
    for (int32_t s = 0; s < kSiblings; ++s) {
      SCOPED_TRACE(::testing::Message() << "step " << step << " sibling " << s);
      EXPECT_LT(RelativeError(logits[1][s].data(), logits[0][s].data(), vocab), 1e-5);
      EXPECT_LT(RelativeError(scores[1][s].data(), scores[0][s].data(),
                              static_cast<int64_t>(scores[0][s].size())),
                1e-5);
      next[s] = static_cast<int32_t>(std::max_element(logits[0][s].begin(), logits[0][s].end()) -
                                     logits[0][s].begin());
    }
  }
}

// Logits of one 5-token prefill of `backend`, on the calling thread.
std::vector<float> PrefillLogits(CudaBackend& backend, const std::vector<int32_t>& tokens) {
  std::vector<float> logits(backend.config().vocab_size, NAN);
  const std::vector<int32_t> table = Table(0, static_cast<int64_t>(tokens.size()), 16);
  const ForwardRow row{tokens, 0, table, nullptr, logits.data()};
  const absl::Status status = backend.Forward({&row, 1});
  EXPECT_TRUE(status.ok()) << status;
  return logits;
}

TEST(CudaBackendThreads, AnyThreadRunsOnTheBackendsDevice) {
  SKIP_WITHOUT_DEVICE();
  // The last device: with several, a thread left on device 0 would allocate and launch there.
  const int device = kernels::CudaDeviceCount() - 1;
  std::mt19937 rng(7);
  const RandomLlama model(testing::TinyConfig(), /*bf16=*/true, rng);
  auto backend = CudaBackend::Create(model.config(), model.Lookup(),
                                     {.device = device, .kv_blocks = 64, .block_size = 16});
  ASSERT_TRUE(backend.ok()) << backend.status();
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  const std::vector<float> here = PrefillLogits(**backend, tokens);
  std::vector<float> there;
  std::thread other([&] {
    cudaSetDevice(0);  // What a fresh thread has: device 0 current.
    there = PrefillLogits(**backend, tokens);
  });
  other.join();
  ASSERT_EQ(there.size(), here.size());
  EXPECT_LT(RelativeError(there.data(), here.data(), static_cast<int64_t>(here.size())), 1e-6);
}

// In the child of the death test below: 0 when a backend hit by an illegal address reports
// itself unusable with that error, else the step that went wrong.
int StickyErrorOutcome() {
  std::mt19937 rng(7);
  const RandomLlama model(testing::TinyConfig(), /*bf16=*/true, rng);
  auto backend = CudaBackend::Create(model.config(), model.Lookup(),
                                     {.device = 0, .kv_blocks = 64, .block_size = 16});
  if (!backend.ok() || !(*backend)->Usable().ok()) return 2;
  if (testing::LaunchIllegalWrite((*backend)->context().stream()) != cudaSuccess) return 3;
  const std::vector<int32_t> tokens = {1, 2, 3};
  std::vector<float> logits((*backend)->config().vocab_size);
  const std::vector<int32_t> table = Table(0, 3, 16);
  const ForwardRow row{tokens, 0, table, nullptr, logits.data()};
  if ((*backend)->Forward({&row, 1}).ok()) return 4;
  const absl::Status usable = (*backend)->Usable();
  return !usable.ok() && usable.message().find("cudaErrorIllegalAddress") != std::string::npos ? 0
                                                                                               : 5;
}

// In a child process (death-test style "threadsafe" re-executes the binary): a sticky error
// poisons the whole process's context.
TEST(CudaBackendDeathTest, AStickyErrorMakesTheBackendUnusable) {
  SKIP_WITHOUT_DEVICE();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(StickyErrorOutcome()), ::testing::ExitedWithCode(0), "");
}

TEST(CudaBackendNoDevice, RefusesWithoutDevice) {
  if (kernels::CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present";
  std::mt19937 rng(1);
  const RandomLlama model(testing::TinyConfig(), /*bf16=*/true, rng);
  auto backend = CudaBackend::Create(model.config(), model.Lookup(), {});
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition) << backend.status();
}

}  // namespace
}  // namespace arbor::worker
