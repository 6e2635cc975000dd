// SmolLM2-135M-Instruct, the real model Arbor serves by default (a Q4_1 / Q8_0 GGUF), in the CPU
// backend against tests/model/gguf_reference.py: an independent float64 NumPy forward over the
// tensors as llama.cpp's `gguf` package dequantizes them, with llama.cpp's interleaved RoPE on the
// rows as stored (Arbor un-permutes them at load and rotates halves, so agreement proves the
// un-permute). Prompts: chat (with the template's default system message) and raw text, 1 to 300
// tokens; every layer count from 1 to 30 on one prompt; a prompt reached through a prefix-cache
// hit; and the entropix metrics of each last position.
//
// Tolerances, exact mode (--activation_quant=f32: fp32 from the exactly widened weights, the
// reference in float64): logits max |Δ| ≤ 1e-3 · max |reference| (seen: 0.3e-6 to 3.2e-6), and
// the same top 10 in the same order except inside near-ties (gap < 1e-3 · max |reference|).
// Entropy (bits) and the attention statistics: 2e-3 absolute + 2e-3 relative; varentropy (bits²):
// 1e-2 + 5e-3. Every case runs in this mode: it is what proves the forward.
//
// The default mode (q8: activations rounded to 8 bits per 32 values before each quantized
// matmul, as llama.cpp computes) carries that rounding through 30 layers, so on the whole-model
// cases it is held to restated bounds: logits max |Δ| ≤ 0.15 · max |reference| (seen: up to
// 0.061–0.079 of a largest logit of 15–25, over two builds that differ only in summation order),
// the top 10 in order up to near-ties within that bound (the top two may swap where they are
// 0.04–0.09 apart in the reference), entropy within 0.3 + 0.05 relative bits (seen: 0.17–0.24)
// and varentropy within 1.5 + 0.1 relative bits² (seen: 0.47–0.67). llama.cpp's logits carry the
// same kind of noise (smollm2_llama_cpp_test.cc). The attention statistics are compared in the
// exact mode only: the attention code is the same in both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "entropix/attention_metrics.h"
#include "entropix/logit_metrics.h"
#include "model/checkpoint.h"
#include "model/tokenizer/gguf_tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/support/python_reference.h"
#include "tests/support/smollm2.h"
#include "worker/backend/cpu_backend.h"
#include "worker/kv/kv_cache.h"

namespace arbor::worker {
namespace {

struct Case {
  std::string what;
  std::vector<int32_t> tokens;
  int layers = 0;  // 0: all.
};

struct Output {
  std::vector<float> logits;
  std::vector<float> scores;  // [heads, tokens].
};

class SmolLM2Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::string> path = arbor::testing::SmolLM2Path();
    if (absl::IsUnavailable(path.status())) GTEST_SKIP() << path.status();  // No network.
    ASSERT_TRUE(path.ok()) << path.status();
    path_ = new std::string(*path);
    auto checkpoint = model::Checkpoint::Open(*path_);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    checkpoint_ = checkpoint->release();
    auto tokenizer = arbor::testing::SmolLM2Tokenizer();
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = new model::ModelTokenizer(*std::move(tokenizer));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete checkpoint_;
    delete path_;
  }

  static std::unique_ptr<CpuBackend> Backend(
      int layers, kernels::ActivationQuant mode = kernels::ActivationQuant::kF32) {
    model::ModelConfig config = checkpoint_->config();
    if (layers > 0) config.num_layers = layers;
    const model::Checkpoint* c = checkpoint_;
    auto backend = CpuBackend::Create(
        config, [c](const std::string& name) { return c->Tensor(name); },
        {.kv_blocks = 64, .block_size = 16, .threads = 2, .activation_quant = mode});
    EXPECT_TRUE(backend.ok()) << backend.status();
    return std::move(backend).value();
  }

  // The forward of `tokens` appended to sequence `id` (after whatever the prefix tree holds).
  static Output Run(CpuBackend& backend, KvCache& kv, SeqId id, const std::vector<int32_t>& tokens,
                    int32_t* hit = nullptr) {
    EXPECT_TRUE(kv.Create(id).ok());
    absl::StatusOr<int32_t> cached = kv.Append(id, tokens);
    EXPECT_TRUE(cached.ok()) << cached.status();
    if (hit != nullptr) *hit = *cached;
    Output out;
    out.logits.resize(backend.config().vocab_size);
    out.scores.resize(int64_t{backend.config().num_heads} * tokens.size());
    ForwardRow row{.tokens = std::span<const int32_t>(tokens).subspan(*cached),
                   .start_pos = *cached,
                   .block_table = (*kv.Find(id))->blocks,
                   .logits = out.logits.data(),
                   .last_scores = out.scores.data()};
    EXPECT_TRUE(backend.Forward({&row, 1}).ok());
    return out;
  }

  static std::vector<int32_t> Chat(const std::string& question) {
    auto ids = model::ApplyChatTemplate(*tokenizer_->tokenizer, tokenizer_->chat_template.value(),
                                        {{"user", question}}, /*add_generation_prompt=*/true);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return std::vector<int32_t>(ids->begin(), ids->end());
  }
  static std::vector<int32_t> Text(const std::string& text) {
    const std::vector<int> ids = tokenizer_->tokenizer->Encode(text);
    return std::vector<int32_t>(ids.begin(), ids.end());
  }

  static inline std::string* path_ = nullptr;
  static inline model::Checkpoint* checkpoint_ = nullptr;
  static inline model::ModelTokenizer* tokenizer_ = nullptr;
};

nlohmann::json Reference(const std::string& gguf, const std::vector<Case>& cases) {
  nlohmann::json request = {{"gguf", gguf}, {"logits", "last"}, {"top_k", 10}};
  for (const Case& c : cases) {
    nlohmann::json entry = {{"tokens", c.tokens}};
    if (c.layers > 0) entry["layers"] = c.layers;
    request["sequences"].push_back(entry);
  }
  return arbor::testing::RunPythonReference("tests/model/gguf_reference.py", request);
}

void ExpectNear(double actual, double expected, double abs_tol, double rel_tol,
                const std::string& what) {
  EXPECT_LE(std::abs(actual - expected), abs_tol + rel_tol * std::abs(expected))
      << what << ": Arbor " << actual << " vs reference " << expected;
}

struct Tolerance {
  double logits = 1e-3;  // Of max |reference logit|: the bound on every logit and on near-ties.
  double entropy_abs = 2e-3, entropy_rel = 2e-3;
  double varentropy_abs = 1e-2, varentropy_rel = 5e-3;
  bool attention = true;  // Compare the attention statistics too.
};

// Worst seen differences, printed at the end.
struct Seen {
  double logits = 0, entropy = 0, varentropy = 0;
};

void Compare(const Case& c, const Output& got, const nlohmann::json& want,
             const Tolerance& tol = {}, Seen* seen = nullptr) {
  SCOPED_TRACE(c.what);
  const std::vector<double> ref = want["logits"][0].get<std::vector<double>>();
  ASSERT_EQ(ref.size(), got.logits.size());
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_ref = std::max(max_ref, std::abs(ref[i]));
    max_diff = std::max(max_diff, std::abs(ref[i] - got.logits[i]));
  }
  const double bound = tol.logits * max_ref;
  EXPECT_LE(max_diff, bound) << "max |logit difference| (max |reference logit| " << max_ref << ")";
  std::cout << c.what << ": " << c.tokens.size() << " tokens, max |logit difference| / max "
            << "|reference logit| = " << max_diff / max_ref << "\n";
  // Top 10: Arbor's order must be the reference's, up to near-ties.
  std::vector<int> order(got.logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + 10, order.end(), [&](int a, int b) {
    return got.logits[a] != got.logits[b] ? got.logits[a] > got.logits[b] : a < b;
  });
  for (int i = 0; i < 10; ++i) {
    const int want_id = want["top_k"][i][0].get<int>();
    if (order[i] == want_id) continue;
    EXPECT_LE(std::abs(ref[order[i]] - ref[want_id]), bound)
        << "rank " << i << ": Arbor " << order[i] << ", reference " << want_id;
  }
  // Entropix metrics of the step, through the functions the engine uses.
  absl::StatusOr<entropix::LogitMetrics> logit =
      entropix::ComputeLogitMetrics(got.logits.data(), static_cast<int>(got.logits.size()), 0);
  ASSERT_TRUE(logit.ok()) << logit.status();
  ExpectNear(logit->entropy, want["entropy_bits"], tol.entropy_abs, tol.entropy_rel, "entropy");
  ExpectNear(logit->varentropy, want["varentropy_bits2"], tol.varentropy_abs, tol.varentropy_rel,
             "varentropy");
  if (seen != nullptr) {
    seen->logits = std::max(seen->logits, max_diff / max_ref);
    seen->entropy =
        std::max(seen->entropy, std::abs(logit->entropy - want["entropy_bits"].get<double>()));
    seen->varentropy = std::max(
        seen->varentropy, std::abs(logit->varentropy - want["varentropy_bits2"].get<double>()));
  }
  if (!tol.attention) return;
  const auto& ref_scores = want["attention_scores"];
  const int heads = static_cast<int>(ref_scores.size());
  const int keys = static_cast<int>(c.tokens.size());
  std::vector<float> ref_flat;
  for (const auto& row : ref_scores) {
    for (double s : row.get<std::vector<double>>()) ref_flat.push_back(static_cast<float>(s));
  }
  for (entropix::AttentionMode mode :
       {entropix::AttentionMode::kExact, entropix::AttentionMode::kReference}) {
    auto a = entropix::ComputeAttentionMetrics(got.scores.data(), heads, keys, keys, mode, 4096);
    auto b = entropix::ComputeAttentionMetrics(ref_flat.data(), heads, keys, keys, mode, 4096);
    ASSERT_TRUE(a.ok() && b.ok());
    ExpectNear(a->attn_entropy, b->attn_entropy, 2e-3, 2e-3, "attn_entropy");
    ExpectNear(a->attn_varentropy, b->attn_varentropy, 2e-3, 2e-3, "attn_varentropy");
    ExpectNear(a->attn_head_varentropy, b->attn_head_varentropy, 1e-2, 5e-3,
               "attn_head_varentropy");
    ExpectNear(a->agreement, b->agreement, 2e-3, 2e-3, "agreement");
    ExpectNear(a->interaction_strength, b->interaction_strength, 2e-3, 2e-3, "interaction");
  }
}

TEST_F(SmolLM2Test, LogitsAndMetricsMatchFloat64Reference) {
  const model::ModelConfig& config = checkpoint_->config();
  ASSERT_EQ(config.num_layers, 30);
  ASSERT_EQ(config.vocab_size, 49152);
  std::string long_text;
  for (int i = 0; Text(long_text).size() < 290; ++i) {
    long_text += absl::StrCat("Step ", i, ": the river carries ", i * 7 % 13,
                              " boats past the old mill, and nobody counts them twice. ");
  }
  std::vector<Case> cases = {
      {"chat", Chat("What is the capital of France?")},
      {"raw text", Text("The quick brown fox jumps over the lazy dog because")},
      {"one token", {1}},
      {"long text", Text(long_text)},
  };
  ASSERT_LE(cases[3].tokens.size(), 320u);
  const int full_cases = static_cast<int>(cases.size());
  // Every layer count on the chat prompt: errors that later layers would hide show up here.
  for (int layers = 1; layers < config.num_layers; ++layers) {
    cases.push_back({absl::StrCat("chat, ", layers, " layers"), cases[0].tokens, layers});
  }
  // A prompt whose first 32 tokens come from the prefix tree.
  Case extended{"chat after a prefix-cache hit", cases[0].tokens};
  for (int32_t t : Text(" Answer in one word.")) extended.tokens.push_back(t);
  cases.push_back(extended);

  const nlohmann::json reference = Reference(*path_, cases);
  ASSERT_TRUE(reference.is_object());
  ASSERT_EQ(reference["results"].size(), cases.size());

  std::unique_ptr<CpuBackend> full = Backend(0);
  KvCache kv(full.get());
  for (int i = 0; i < full_cases; ++i) {
    Compare(cases[i], Run(*full, kv, i, cases[i].tokens), reference["results"][i]);
  }
  int32_t hit = 0;
  const Output after_hit = Run(*full, kv, 100, extended.tokens, &hit);
  EXPECT_GE(hit, 32);
  Compare(extended, after_hit, reference["results"].back());
  for (size_t i = full_cases; i + 1 < cases.size(); ++i) {
    std::unique_ptr<CpuBackend> truncated = Backend(cases[i].layers);
    KvCache fresh(truncated.get());
    Compare(cases[i], Run(*truncated, fresh, 0, cases[i].tokens), reference["results"][i]);
  }

  // The default 8-bit-activation mode on the whole-model cases.
  const Tolerance q8{.logits = 0.15,
                     .entropy_abs = 0.3,
                     .entropy_rel = 0.05,
                     .varentropy_abs = 1.5,
                     .varentropy_rel = 0.1,
                     .attention = false};
  Seen seen;
  std::unique_ptr<CpuBackend> q8_backend = Backend(0, kernels::ActivationQuant::kQ8);
  KvCache q8_kv(q8_backend.get());
  for (int i = 0; i < full_cases; ++i) {
    SCOPED_TRACE("activation_quant q8");
    Compare(cases[i], Run(*q8_backend, q8_kv, i, cases[i].tokens), reference["results"][i], q8,
            &seen);
  }
  std::cout << "q8 activations: max |logit difference| / max |reference logit| " << seen.logits
            << ", |entropy difference| " << seen.entropy << " bits, |varentropy difference| "
            << seen.varentropy << " bits²\n";
}

}  // namespace
}  // namespace arbor::worker
