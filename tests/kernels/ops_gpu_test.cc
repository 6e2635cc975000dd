// The small CUDA ops, the cuBLASLt products and the row reductions against their CPU twins (the
// _ref.cc op, or entropix's metrics) on fresh random inputs over awkward sizes, outputs poisoned
// (NaN / −1) before each run so an unwritten element fails; the GEMV and paged attention have
// files of their own. Skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "base/bf16.h"
#include "entropix/attention_metrics.h"
#include "entropix/logit_metrics.h"
#include "kernels/attention_stats_cuda.h"
#include "kernels/bias_add_cuda.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/embedding_cuda.h"
#include "kernels/logit_stats_cuda.h"
#include "kernels/rms_norm_cuda.h"
#include "kernels/rope_cuda.h"
#include "tests/kernels/gpu_test_support.h"

namespace arbor::kernels {
namespace {

static_assert(sizeof(AttentionHeadPartial) == sizeof(entropix::AttentionHeadState));
static_assert(offsetof(AttentionHeadPartial, abs_sum) ==
              offsetof(entropix::AttentionHeadState, abs_sum));
static_assert(offsetof(AttentionHeadPartial, count) ==
              offsetof(entropix::AttentionHeadState, count));

TEST(OpsGpu, EmbeddingBf16AndF32) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (int64_t tokens : {1, 7, 64}) {
    const int64_t vocab = 1000, dim = 130;
    std::vector<float> table = Normal(rng, vocab * dim);
    std::vector<uint16_t> table_bf16(table.size());
    for (size_t i = 0; i < table.size(); ++i) table_bf16[i] = base::FloatToBf16(table[i]);
    std::vector<int32_t> ids(tokens);
    for (int32_t& t : ids) t = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
    DeviceArray<int32_t> d_ids(ids);
    DeviceArray<float> d_table(table);
    DeviceArray<uint16_t> d_table_bf16(table_bf16);
    for (WeightType type : {WeightType::kF32, WeightType::kBF16}) {
      const void* host_table =
          type == WeightType::kF32 ? static_cast<const void*>(table.data()) : table_bf16.data();
      const void* dev_table =
          type == WeightType::kF32 ? static_cast<const void*>(d_table.get()) : d_table_bf16.get();
      std::vector<float> want(tokens * dim);
      EmbeddingRef({ids.data(), host_table, type, want.data(), tokens, vocab, dim, dim});
      DeviceArray<float> out(tokens * dim);
      out.Poison();
      ExpectOk(LaunchEmbedding({d_ids.get(), dev_table, type, out.get(), tokens, vocab, dim, dim},
                               nullptr));
      EXPECT_EQ(out.Download(), want);  // A copy (and exact widening): bit-identical.
    }
  }
}

TEST(OpsGpu, RmsNormWithAndWithoutResidual) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (const auto& [rows, dim] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {64, 2048}}) {
    for (bool fused : {false, true}) {
      std::vector<float> x = Normal(rng, rows * dim, 3.0f), weight = Normal(rng, dim);
      std::vector<float> residual = Normal(rng, rows * dim), want(rows * dim);
      std::vector<float> want_residual = residual;
      RmsNormRef({x.data(), fused ? want_residual.data() : nullptr, weight.data(), want.data(),
                  rows, dim, dim, dim, dim, 1e-5f});
      DeviceArray<float> d_x(x), d_w(weight), d_res(residual), out(rows * dim);
      out.Poison();
      ExpectOk(LaunchRmsNorm({d_x.get(), fused ? d_res.get() : nullptr, d_w.get(), out.get(), rows,
                              dim, dim, dim, dim, 1e-5f},
                             nullptr));
      ExpectClose(out.Download(), want, 1e-6);
      if (fused) {  // Same fp32 adds: exact.
        EXPECT_EQ(d_res.Download(), want_residual);
      }
    }
  }
}

TEST(OpsGpu, BiasAddOverStridedRows) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (const auto& [rows, dim] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {64, 1152}}) {
    const int64_t stride = dim + 3;  // Untouched gaps between rows must stay as they were.
    std::vector<float> x = Normal(rng, rows * stride), bias = Normal(rng, dim), want = x;
    BiasAddRef({want.data(), bias.data(), rows, dim, stride});
    DeviceArray<float> d_x(x), d_bias(bias);
    ExpectOk(LaunchBiasAdd({d_x.get(), d_bias.get(), rows, dim, stride}, nullptr));
    EXPECT_EQ(d_x.Download(), want);  // One fp32 add per element: bit-identical.
  }
}

TEST(OpsGpu, RopeLlama3Scaling) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  const RopeScalingParams scaling{RopeScalingParams::Type::kLlama3, 32.0, 1.0, 4.0, 8192.0, {}};
  for (int64_t head_dim : {16, 64, 128}) {
    const std::vector<float> inv_freq = RopeInvFreq(500000.0, static_cast<int>(head_dim), scaling);
    for (int64_t tokens : {1, 17, 1000}) {
      const int64_t heads = 3, stride = heads * head_dim + 5, half = head_dim / 2;
      std::vector<int32_t> positions(tokens);
      for (int32_t& p : positions) p = std::uniform_int_distribution<int32_t>(0, 131071)(rng);
      std::vector<float> cos(tokens * half), sin(tokens * half);
      RopeCosSinRef({positions.data(), inv_freq.data(), cos.data(), sin.data(), tokens, head_dim});
      std::vector<float> x = Normal(rng, tokens * stride), want = x;
      RopeRef({want.data(), cos.data(), sin.data(), tokens, heads, head_dim, stride});

      DeviceArray<int32_t> d_pos(positions);
      DeviceArray<float> d_freq(inv_freq), d_cos(tokens * half), d_sin(tokens * half), d_x(x);
      d_cos.Poison();
      d_sin.Poison();
      ExpectOk(LaunchRopeCosSin(
          {d_pos.get(), d_freq.get(), d_cos.get(), d_sin.get(), tokens, head_dim}, nullptr));
      // cos/sin of a double angle rounded to float: at most one ulp apart from the host's libm.
      ExpectClose(d_cos.Download(), cos, 1e-7);
      ExpectClose(d_sin.Download(), sin, 1e-7);
      ExpectOk(LaunchRope({d_x.get(), d_cos.get(), d_sin.get(), tokens, heads, head_dim, stride},
                          nullptr));
      ExpectClose(d_x.Download(), want, 1e-6);
    }
  }
}

// Qwen3's q/k norms fused into the rotation: each head as RmsNormRef over that head alone (q's
// weight for the first heads, k's for the rest), then RopeRef.
TEST(OpsGpu, NormRopeIsAHeadsRmsNormThenRope) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  const float eps = 1e-6f;
  for (int64_t head_dim : {16, 64, 128, 256}) {
    const std::vector<float> inv_freq = RopeInvFreq(1000000.0, static_cast<int>(head_dim), {});
    for (int64_t tokens : {1, 3, 300}) {
      const int64_t q_heads = 6, heads = q_heads + 3, stride = heads * head_dim + 7;
      const int64_t half = head_dim / 2;
      std::vector<int32_t> positions(tokens);
      for (int32_t& p : positions) p = std::uniform_int_distribution<int32_t>(0, 40959)(rng);
      std::vector<float> cos(tokens * half), sin(tokens * half);
      RopeCosSinRef({positions.data(), inv_freq.data(), cos.data(), sin.data(), tokens, head_dim});
      std::vector<float> x = Normal(rng, tokens * stride), want = x;
      std::vector<float> q_weight = Normal(rng, head_dim), k_weight = Normal(rng, head_dim);
      for (int64_t t = 0; t < tokens; ++t) {
        float* row = want.data() + t * stride;
        RmsNormRef(
            {row, nullptr, q_weight.data(), row, q_heads, head_dim, head_dim, 0, head_dim, eps});
        float* k = row + q_heads * head_dim;
        RmsNormRef({k, nullptr, k_weight.data(), k, heads - q_heads, head_dim, head_dim, 0,
                    head_dim, eps});
      }
      RopeRef({want.data(), cos.data(), sin.data(), tokens, heads, head_dim, stride});

      DeviceArray<float> d_cos(cos), d_sin(sin), d_x(x), d_q(q_weight), d_k(k_weight);
      ExpectOk(
          LaunchNormRope({d_x.get(), d_cos.get(), d_sin.get(), tokens, heads, head_dim, stride},
                         {d_q.get(), d_k.get(), q_heads, eps}, nullptr));
      // The gaps between tokens stay untouched (exactly), the heads within fp32 rounding.
      const std::vector<float> got = d_x.Download();
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t i = heads * head_dim; i < stride; ++i) {
          ASSERT_EQ(got[t * stride + i], x[t * stride + i]) << t << " " << i;
        }
      }
      ExpectClose(got, want, 1e-6);
    }
  }
}

TEST(OpsGpu, MatmulAndLogitsThroughCublasLt) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  auto ctx = CudaContext::Create(0);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  (*ctx)->set_gemv_max_rows(0);  // Every product through cuBLASLt (the GEMV has its own test).
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 8},
                                {7, 33, 64},
                                {64, 2048, 512},
                                {3, 512, 2048}}) {
    std::vector<float> x = Normal(rng, m * k), w = Normal(rng, n * k);
    std::vector<uint16_t> w_bf16(w.size());
    for (size_t i = 0; i < w.size(); ++i) w_bf16[i] = base::FloatToBf16(w[i]);
    // The GEMM reads bf16 activations: the reference gets the same rounded x, so the only
    // difference left is the order of fp32 accumulation.
    std::vector<float> x_rounded(x.size());
    for (size_t i = 0; i < x.size(); ++i) x_rounded[i] = base::Bf16ToFloat(base::FloatToBf16(x[i]));
    std::vector<float> want(m * n);
    MatmulRef({x_rounded.data(), w_bf16.data(), WeightType::kBF16, want.data(), m, n, k, k, n},
              nullptr);
    DeviceArray<float> d_x(x), out(m * n);
    DeviceArray<uint16_t> d_w(w_bf16);
    out.Poison();
    ASSERT_TRUE((*ctx)
                    ->Matmul({.x = d_x.get(),
                              .w = d_w.get(),
                              .w_type = WeightType::kBF16,
                              .out = out.get(),
                              .m = m,
                              .n = n,
                              .k = k,
                              .x_stride = k,
                              .out_stride = n,
                              .batch_invariant = false})
                    .ok());
    ExpectClose(out.Download(), want, 1e-5);

    // Logits: every other row, in reverse order.
    std::vector<int32_t> rows;
    for (int64_t r = m - 1; r >= 0; r -= 2) rows.push_back(static_cast<int32_t>(r));
    const int64_t nr = static_cast<int64_t>(rows.size());
    std::vector<float> want_logits(nr * n);
    LogitsRef({x_rounded.data(), rows.data(), w_bf16.data(), WeightType::kBF16, want_logits.data(),
               nr, k, n, k, n},
              nullptr);
    DeviceArray<int32_t> d_rows(rows);
    DeviceArray<float> logits(nr * n);
    logits.Poison();
    ASSERT_TRUE((*ctx)
                    ->Logits({.hidden = d_x.get(),
                              .rows = d_rows.get(),
                              .lm_head = d_w.get(),
                              .lm_head_type = WeightType::kBF16,
                              .out = logits.get(),
                              .num_rows = nr,
                              .dim = k,
                              .vocab = n,
                              .hidden_stride = k,
                              .out_stride = n,
                              .batch_invariant = false})
                    .ok());
    ExpectClose(logits.Download(), want_logits, 1e-5);
  }
}

TEST(OpsGpu, LogitStatsMatchEntropix) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (const auto& [rows, vocab, top_k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                                           {7, 4097, 0},
                                           {7, 1000, 256},
                                           {64, 128256, 64},
                                           {1, 128256, 256},
                                           {3, 128256, 1024}}) {
    SCOPED_TRACE(testing::Message() << rows << " rows of " << vocab << ", top " << top_k);
    std::vector<float> logits = Normal(rng, rows * vocab, 4.0f);
    // Ties and masked tokens: the canonical order must break ties by lower id.
    for (int64_t r = 0; r < rows; ++r) {
      logits[r * vocab + vocab / 2] = logits[r * vocab];
      if (vocab > 2) logits[r * vocab + 1] = -INFINITY;
    }
    const int64_t chunks = LogitStatsChunks(vocab);
    DeviceArray<float> d_logits(logits);
    DeviceArray<base::SoftmaxMoments> moments(rows * chunks);
    DeviceArray<int32_t> bad(rows * chunks), probe_above(rows * chunks),
        top_ids(std::max<int64_t>(1, rows * top_k)),
        cand_ids(std::max<int64_t>(1, rows * chunks * top_k));
    DeviceArray<float> top_values(std::max<int64_t>(1, rows * top_k)),
        cand_values(std::max<int64_t>(1, rows * chunks * top_k));
    // A probed token per row (none in the last row), ranked on the device.
    std::vector<int32_t> probes(rows);
    for (int64_t r = 0; r < rows; ++r)
      probes[r] = r + 1 == rows && rows > 1 ? -1 : (r * 7919) % vocab;
    DeviceArray<int32_t> d_probes(probes);
    DeviceArray<LogitRecord> records(rows);
    records.Poison();
    moments.Poison();
    bad.Poison();
    top_ids.Poison();
    top_values.Poison();
    ExpectOk(LaunchLogitStats({d_logits.get(), rows, vocab, vocab, top_k, moments.get(), bad.get(),
                               top_values.get(), top_ids.get(), cand_values.get(), cand_ids.get(),
                               d_probes.get(), records.get(), probe_above.get()},
                              nullptr));
    const auto got_records = records.Download();
    const auto got_moments = moments.Download();
    const auto got_bad = bad.Download();
    const auto got_values = top_values.Download();
    const auto got_ids = top_ids.Download();
    for (int64_t r = 0; r < rows; ++r) {
      auto want = entropix::ComputeLogitMetrics(logits.data() + r * vocab, static_cast<int>(vocab),
                                                static_cast<int>(top_k));
      ASSERT_TRUE(want.ok()) << want.status();
      base::SoftmaxMoments merged;
      for (int64_t c = 0; c < chunks; ++c) {
        EXPECT_EQ(got_bad[r * chunks + c], -1);
        merged.Merge(got_moments[r * chunks + c]);
      }
      auto got = entropix::FinishLogitMetrics(merged);
      ASSERT_TRUE(got.ok()) << got.status();
      // The device's own merge of the same chunks, in the same order, by the same code.
      const LogitRecord& record = got_records[r];
      // (Device and host exp(double) may differ in the last place.)
      const double scale = 1e-12 * (merged.sum + std::abs(merged.sum_x) + merged.sum_xx);
      EXPECT_EQ(record.moments.max, merged.max);
      EXPECT_NEAR(record.moments.sum, merged.sum, scale);
      EXPECT_NEAR(record.moments.sum_x, merged.sum_x, scale);
      EXPECT_NEAR(record.moments.sum_xx, merged.sum_xx, scale);
      EXPECT_EQ(record.first_non_finite, -1);
      const int32_t probe = probes[r];
      if (probe < 0) {
        EXPECT_EQ(record.probe_rank, 0);
      } else {
        const float* row = logits.data() + r * vocab;
        EXPECT_EQ(record.probe_logit, row[probe]);
        EXPECT_EQ(record.probe_rank,
                  1 + std::count_if(row, row + vocab, [&](float x) { return x > row[probe]; }));
      }
      EXPECT_NEAR(got->entropy, want->entropy, 1e-4 * (1 + want->entropy));
      EXPECT_NEAR(got->varentropy, want->varentropy, 1e-4 * (1 + want->varentropy));
      EXPECT_NEAR(got->logsumexp, want->logsumexp, 1e-5 * (1 + std::abs(want->logsumexp)));
      EXPECT_EQ(got->max_logit, want->max_logit);
      for (int64_t i = 0; i < top_k; ++i) {
        ASSERT_EQ(got_ids[r * top_k + i], want->top_k[i].id) << "row " << r << " rank " << i;
        EXPECT_NEAR(got_values[r * top_k + i] - got->logsumexp, want->top_k[i].logprob, 1e-4);
      }
    }
  }
}

TEST(OpsGpu, LogitStatsReportNonFinite) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  const int64_t vocab = 5000;
  std::vector<float> logits = Normal(rng, vocab);
  logits[4321] = NAN;
  logits[4400] = INFINITY;
  const int64_t chunks = LogitStatsChunks(vocab);
  DeviceArray<float> d_logits(logits);
  DeviceArray<base::SoftmaxMoments> moments(chunks);
  DeviceArray<int32_t> bad(chunks);
  bad.Poison();
  DeviceArray<LogitRecord> records(1);
  ExpectOk(LaunchLogitStats({d_logits.get(), 1, vocab, vocab, 0, moments.get(), bad.get(), nullptr,
                             nullptr, nullptr, nullptr, nullptr, records.get()},
                            nullptr));
  EXPECT_EQ(bad.Download(), (std::vector<int32_t>{-1, -1, 4321}));
  EXPECT_EQ(records.Download()[0].first_non_finite, 4321);
}

// The device arrays of one LaunchAttentionStats call and the params pointing at them.
struct AttentionStatsCall {
  AttentionStatsCall(int64_t rows, int64_t heads, int64_t max_chunks)
      : partials(rows * heads * max_chunks),
        merged(rows * heads),
        chunk_bad(rows * heads * max_chunks),
        bad(rows),
        log_norm(rows * heads),
        sums(rows * max_chunks) {
    merged.Poison();
    bad.Poison();
    sums.Poison();
    params.rows = rows;
    params.num_heads = heads;
    params.max_chunks = max_chunks;
    params.partials = partials.get();
    params.chunk_non_finite = chunk_bad.get();
    params.log_normalizers = log_norm.get();
    params.heads = merged.get();
    params.non_finite = bad.get();
    params.agreement_sums = sums.get();
  }
  DeviceArray<AttentionHeadPartial> partials, merged;
  DeviceArray<int32_t> chunk_bad, bad;
  DeviceArray<double> log_norm, sums;
  AttentionStatsParams params;
};

// Every reduced row of a step in one launch: rows of different key counts (one and several
// chunks) and modes, some sequences read by two rows, heads merged and normalised on the device.
TEST(OpsGpu, AttentionStatsMatchEntropix) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (int heads : {1, 8, 32}) {
    SCOPED_TRACE(testing::Message() << heads << " heads");
    const std::vector<int32_t> keys = {1, 17, 1000, 4096, 5000};  // Per sequence.
    std::vector<std::vector<float>> scores;
    std::vector<DeviceArray<float>*> owned;
    std::vector<float*> table;
    for (int32_t k : keys) {
      scores.push_back(Normal(rng, int64_t{heads} * k, 3.0f));
      owned.push_back(new DeviceArray<float>(scores.back()));
      table.push_back(owned.back()->get());
    }
    // Rows: every sequence in EXACT mode, then every sequence in REFERENCE mode (4096 slots).
    std::vector<int32_t> seq, slots;
    std::vector<entropix::AttentionMode> modes;
    for (auto mode : {entropix::AttentionMode::kExact, entropix::AttentionMode::kReference}) {
      for (size_t i = 0; i < keys.size(); ++i) {
        seq.push_back(static_cast<int32_t>(i));
        slots.push_back(mode == entropix::AttentionMode::kReference ? std::max(4096, keys[i])
                                                                    : keys[i]);
        modes.push_back(mode);
      }
    }
    const int64_t rows = static_cast<int64_t>(seq.size());
    const int64_t max_chunks = AttentionStatsChunks(5000);
    DeviceArray<float*> d_table(table);
    DeviceArray<int32_t> d_keys(keys), d_seq(seq), d_slots(slots);
    AttentionStatsCall call(rows, heads, max_chunks);
    call.params.scores = d_table.get();
    call.params.keys = d_keys.get();
    call.params.seq = d_seq.get();
    call.params.slots = d_slots.get();
    ExpectOk(LaunchAttentionStats(call.params, nullptr));
    const auto got_heads = call.merged.Download();
    const auto got_bad = call.bad.Download();
    const auto got_sums = call.sums.Download();
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t k = keys[seq[r]];
      SCOPED_TRACE(testing::Message() << k << " keys, mode " << static_cast<int>(modes[r]));
      auto want =
          entropix::ComputeAttentionMetrics(scores[seq[r]].data(), heads, k, k, modes[r], 4096);
      ASSERT_TRUE(want.ok()) << want.status();
      EXPECT_EQ(got_bad[r], 0);
      std::vector<entropix::AttentionHeadState> states(heads);
      std::memcpy(static_cast<void*>(states.data()), &got_heads[r * heads],
                  heads * sizeof(AttentionHeadPartial));
      const double agreement = std::accumulate(got_sums.begin() + r * max_chunks,
                                               got_sums.begin() + (r + 1) * max_chunks, 0.0);
      auto got = entropix::CombineAttentionMetrics(states, agreement, modes[r], 4096);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_NEAR(got->attn_entropy, want->attn_entropy, 1e-4 * (1 + want->attn_entropy));
      EXPECT_NEAR(got->attn_varentropy, want->attn_varentropy, 1e-4 * (1 + want->attn_varentropy));
      EXPECT_NEAR(got->attn_head_varentropy, want->attn_head_varentropy,
                  1e-4 * (1 + want->attn_head_varentropy));
      EXPECT_NEAR(got->agreement, want->agreement, 1e-5 * (1 + want->agreement));
      EXPECT_NEAR(got->interaction_strength, want->interaction_strength,
                  1e-5 * (1 + want->interaction_strength));
    }
    for (DeviceArray<float>* array : owned) delete array;
  }
}

// A NaN or an infinite score flags its row (the host then fails that row), and only it.
TEST(OpsGpu, AttentionStatsFlagNonFiniteScores) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  const int heads = 4, keys = 2000;
  std::vector<float> clean = Normal(rng, heads * keys), nan = clean, inf = clean;
  nan[3 * keys + 1500] = NAN;
  inf[keys + 7] = -INFINITY;
  DeviceArray<float> d_clean(clean), d_nan(nan), d_inf(inf);
  DeviceArray<float*> table(std::vector<float*>{d_clean.get(), d_nan.get(), d_inf.get()});
  DeviceArray<int32_t> d_keys(std::vector<int32_t>{keys, keys, keys}),
      seq(std::vector<int32_t>{0, 1, 2}), slots(std::vector<int32_t>{keys, keys, keys});
  AttentionStatsCall call(3, heads, AttentionStatsChunks(keys));
  call.params.scores = table.get();
  call.params.keys = d_keys.get();
  call.params.seq = seq.get();
  call.params.slots = slots.get();
  ExpectOk(LaunchAttentionStats(call.params, nullptr));
  EXPECT_EQ(call.bad.Download(), (std::vector<int32_t>{0, 1, 1}));
}

}  // namespace
}  // namespace arbor::kernels
