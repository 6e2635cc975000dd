#include "worker/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/bf16.h"
#include "base/status_macros.h"
#include "kernels/embedding.h"
#include "kernels/logits.h"
#include "kernels/matmul.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_kv_append.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "model/llama_tensors.h"
#include "worker/forward_rows.h"
#include "worker/weights.h"

namespace arbor::worker {
namespace {

using kernels::WeightType;

// Row-parallel elementwise ops: fn(first_row, num_rows) calls the reference on a sub-range.
template <typename Fn>
void ForRows(kernels::ThreadPool* pool, int64_t rows, const Fn& fn) {
  pool->ParallelFor(rows, 4, [&](int64_t begin, int64_t end) { fn(begin, end - begin); });
}

}  // namespace

CpuBackend::CpuBackend(const model::ModelConfig& config, const CpuBackendOptions& options)
    : config_(config), options_(options) {}

absl::StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(const model::ModelConfig& config,
                                                               const TensorLookup& lookup,
                                                               const CpuBackendOptions& options) {
  const model::ModelConfig& c = config;
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.head_dim <= 0 || c.vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config of '", c.name, "': every size must be positive"));
  }
  if (c.num_heads % c.num_kv_heads != 0 || c.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config of '", c.name, "': num_attention_heads (", c.num_heads,
                     ") must be a multiple of num_key_value_heads (", c.num_kv_heads,
                     ") and head_dim (", c.head_dim, ") even"));
  }
  if (options.kv_blocks <= 0 || options.block_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("KV cache: kv_blocks (", options.kv_blocks,
                                                   ") and block_size (", options.block_size,
                                                   ") must be positive"));
  }
  std::unique_ptr<CpuBackend> backend(new CpuBackend(config, options));
  RETURN_IF_ERROR(backend->Load(lookup));
  return backend;
}

absl::StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(
    std::shared_ptr<const model::Checkpoint> checkpoint, const CpuBackendOptions& options) {
  const model::Checkpoint* ckpt = checkpoint.get();
  ASSIGN_OR_RETURN(
      std::unique_ptr<CpuBackend> backend,
      Create(
          ckpt->config(), [ckpt](const std::string& name) { return ckpt->Tensor(name); }, options));
  backend->checkpoint_ = std::move(checkpoint);
  return backend;
}

namespace {

// The type `t` is computed in under `choice`.
WeightType Target(const model::TensorView& t, WeightsDtype choice, int64_t cols) {
  switch (choice) {
    case WeightsDtype::kF32:
      return WeightType::kF32;
    case WeightsDtype::kBF16:
      return WeightType::kBF16;
    case WeightsDtype::kQ8_0:
      if (model::IsQuantized(t.dtype)) return *kernels::KernelWeightType(t.dtype);
      return cols % kernels::kQuantBlock == 0 ? WeightType::kQ8_0 : WeightType::kF32;
    case WeightsDtype::kNative:
      break;
  }
  return kernels::KernelWeightType(t.dtype).value_or(WeightType::kF32);
}

// `t` ([rows, cols]) converted once at load to `type`: widened exactly to f32, then narrowed to
// bf16 or Q8_0 when asked.
std::vector<char> Convert(const model::TensorView& t, WeightType type, int64_t rows, int64_t cols) {
  std::vector<char> out;
  if (type == WeightType::kF32) {
    out.resize(rows * cols * sizeof(float));
    WidenRows(t, 0, rows, reinterpret_cast<float*>(out.data()));
    return out;
  }
  const std::vector<float> wide = WidenToFloat(t);
  if (type == WeightType::kBF16) {
    out.resize(wide.size() * sizeof(uint16_t));
    uint16_t* bf16 = reinterpret_cast<uint16_t*>(out.data());
    for (size_t i = 0; i < wide.size(); ++i) bf16[i] = base::FloatToBf16(wide[i]);
  } else {
    out.resize(rows * model::RowBytes(model::DType::kQ8_0, cols));
    kernels::QuantizeRowQ8_0(wide.data(), rows * cols,
                             reinterpret_cast<kernels::BlockQ8_0*>(out.data()));
  }
  return out;
}

}  // namespace

absl::StatusOr<CpuBackend::Matrix> CpuBackend::LoadMatrix(const TensorLookup& lookup,
                                                          const std::string& name, int64_t rows,
                                                          int64_t cols) {
  ASSIGN_OR_RETURN(const model::TensorView t, lookup(name));
  RETURN_IF_ERROR(CheckTensor(t, name, {rows, cols}));
  const WeightType type = Target(t, options_.weights_dtype, cols);
  ++type_counts_[model::DTypeName(kernels::FileDType(type))];
  if (kernels::KernelWeightType(t.dtype) ==
      type) {  // Served from the checkpoint's memory, no copy.
    weight_bytes_ += static_cast<int64_t>(t.nbytes);
    return Matrix{t.data, type};
  }
  std::vector<char>& out = converted_.emplace_back(Convert(t, type, rows, cols));
  weight_bytes_ += static_cast<int64_t>(out.size());
  converted_bytes_ += static_cast<int64_t>(out.size());
  return Matrix{out.data(), type};
}

std::string CpuBackend::weight_types() const {
  std::string out;
  for (const auto& [name, count] : type_counts_) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", name, " ×", count);
  }
  return out;
}

absl::StatusOr<std::vector<float>> CpuBackend::LoadVector(const TensorLookup& lookup,
                                                          const std::string& name, int64_t size) {
  ASSIGN_OR_RETURN(const model::TensorView t, lookup(name));
  RETURN_IF_ERROR(CheckTensor(t, name, {size}));
  return WidenToFloat(t);
}

absl::Status CpuBackend::Load(const TensorLookup& lookup) {
  const model::ModelConfig& c = config_;
  const int64_t hidden = c.hidden_size, ffn = c.intermediate_size;
  const int64_t q_dim = int64_t{c.num_heads} * c.head_dim,
                kv_dim = int64_t{c.num_kv_heads} * c.head_dim;
  ASSIGN_OR_RETURN(embed_, LoadMatrix(lookup, model::kEmbedTokensName, c.vocab_size, hidden));
  const int64_t embed_bytes = weight_bytes_;
  if (c.tie_word_embeddings) {
    lm_head_ = embed_;
  } else {
    ASSIGN_OR_RETURN(lm_head_, LoadMatrix(lookup, model::kLmHeadName, c.vocab_size, hidden));
  }
  ASSIGN_OR_RETURN(final_norm_, LoadVector(lookup, model::kFinalNormName, hidden));
  layers_.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const model::LlamaLayerNames n = model::LlamaLayerTensorNames(l);
    Layer& layer = layers_[l];
    ASSIGN_OR_RETURN(layer.attn_norm, LoadVector(lookup, n.attn_norm, hidden));
    ASSIGN_OR_RETURN(layer.mlp_norm, LoadVector(lookup, n.mlp_norm, hidden));
    ASSIGN_OR_RETURN(layer.q, LoadMatrix(lookup, n.q, q_dim, hidden));
    ASSIGN_OR_RETURN(layer.k, LoadMatrix(lookup, n.k, kv_dim, hidden));
    ASSIGN_OR_RETURN(layer.v, LoadMatrix(lookup, n.v, kv_dim, hidden));
    ASSIGN_OR_RETURN(layer.o, LoadMatrix(lookup, n.o, hidden, q_dim));
    ASSIGN_OR_RETURN(layer.gate, LoadMatrix(lookup, n.gate, ffn, hidden));
    ASSIGN_OR_RETURN(layer.up, LoadMatrix(lookup, n.up, ffn, hidden));
    ASSIGN_OR_RETURN(layer.down, LoadMatrix(lookup, n.down, hidden, ffn));
  }
  // A decode step reads one embedding row, not the table (unless it doubles as the lm_head).
  if (!c.tie_word_embeddings) weight_bytes_ -= embed_bytes;
  inv_freq_ = kernels::RopeInvFreq(c.rope_theta, c.head_dim, RopeScalingParamsOf(c.rope_scaling));
  const size_t pool_bytes = static_cast<size_t>(options_.kv_blocks) * options_.block_size * kv_dim *
                            KvDtypeBytes(options_.kv_dtype);
  k_cache_.assign(c.num_layers, std::vector<char>(pool_bytes));
  v_cache_.assign(c.num_layers, std::vector<char>(pool_bytes));
  const int threads = options_.threads > 0
                          ? options_.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  pool_ = std::make_unique<kernels::ThreadPool>(threads);
  return absl::OkStatus();
}

int64_t CpuBackend::kv_bytes() const {
  int64_t bytes = 0;
  for (size_t l = 0; l < k_cache_.size(); ++l) {
    bytes += static_cast<int64_t>(k_cache_[l].size() + v_cache_[l].size());
  }
  return bytes;
}

kernels::PagedKvLayer CpuBackend::KvLayer(int layer) {
  return KvPools(options_.kv_dtype, k_cache_[layer].data(), v_cache_[layer].data(),
                 {nullptr, nullptr, options_.kv_blocks, options_.block_size, config_.num_kv_heads,
                  config_.head_dim});
}

absl::Status CpuBackend::CopyKvBlocks(std::span<const BlockCopy> copies) {
  const int64_t width = int64_t{config_.num_kv_heads} * config_.head_dim;
  RETURN_IF_ERROR(ValidateBlockCopies(copies, options_.block_size, options_.kv_blocks));
  const int64_t slot_bytes = width * KvDtypeBytes(options_.kv_dtype);
  const int64_t block_bytes = int64_t{options_.block_size} * slot_bytes;
  for (const BlockCopy& c : copies) {
    for (int l = 0; l < config_.num_layers; ++l) {
      for (std::vector<char>* cache : {&k_cache_[l], &v_cache_[l]}) {
        char* base = cache->data();
        std::memmove(base + c.dst * block_bytes, base + c.src * block_bytes,
                     static_cast<size_t>(c.num_tokens * slot_bytes));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::Forward(std::span<const ForwardRow> rows, const TensorTap& tap) {
  RETURN_IF_ERROR(
      ValidateForwardRows(rows, config_.vocab_size, options_.block_size, options_.kv_blocks));
  const model::ModelConfig& c = config_;
  const int64_t hidden = c.hidden_size, ffn = c.intermediate_size, hd = c.head_dim;
  const int64_t q_dim = c.num_heads * hd, kv_dim = c.num_kv_heads * hd;
  kernels::ThreadPool* pool = pool_.get();

  const StepBatch b = MakeStepBatch(rows, options_.block_size);
  const std::vector<int32_t>& tokens = b.tokens;
  const std::vector<int32_t>& logit_rows = b.logit_rows;
  // Score rows of reductions whose caller did not ask for them, back to back.
  std::vector<float*> last_scores;
  bool any_scores = false;
  std::vector<size_t> own_scores_at(rows.size());
  size_t own_scores = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].reduction == nullptr || rows[r].last_scores != nullptr) continue;
    own_scores_at[r] = own_scores;
    own_scores += static_cast<size_t>(c.num_heads) * b.kv_len[r];
  }
  std::vector<float> scores(own_scores);
  for (size_t r = 0; r < rows.size(); ++r) {
    float* row_scores = rows[r].last_scores;
    if (rows[r].reduction != nullptr && row_scores == nullptr) {
      row_scores = scores.data() + own_scores_at[r];
    }
    last_scores.push_back(row_scores);
    any_scores |= row_scores != nullptr;
  }
  const int64_t t = b.num_tokens();
  const kernels::PagedBatch batch = b.View();
  auto emit = [&](std::string_view name, const std::vector<float>& data, int64_t cols) {
    if (tap) tap(name, data.data(), t, cols);
  };

  std::vector<float> x(t * hidden), h(t * hidden), q(t * q_dim), k(t * kv_dim), v(t * kv_dim),
      attn(t * q_dim), delta(t * hidden), gate(t * ffn), up(t * ffn);
  std::vector<float> cos(t * hd / 2), sin(t * hd / 2);
  kernels::EmbeddingRef(
      {tokens.data(), embed_.data, embed_.type, x.data(), t, c.vocab_size, hidden, hidden});
  emit("embed", x, hidden);
  kernels::RopeCosSinRef({b.positions.data(), inv_freq_.data(), cos.data(), sin.data(), t, hd});

  // Residual stream x; every norm after the first also adds the previous sublayer's output
  // (delta) into x, fused.
  auto norm = [&](const std::vector<float>& weight, bool add_delta) {
    ForRows(pool, t, [&](int64_t r0, int64_t n) {
      kernels::RmsNormRef({add_delta ? delta.data() + r0 * hidden : x.data() + r0 * hidden,
                           add_delta ? x.data() + r0 * hidden : nullptr, weight.data(),
                           h.data() + r0 * hidden, n, hidden, hidden, hidden, hidden,
                           c.rms_norm_eps});
    });
  };
  auto matmul = [&](const std::vector<float>& in, int64_t in_dim, const Matrix& w, int64_t out_dim,
                    std::vector<float>& out) {
    kernels::MatmulRef({in.data(), w.data, w.type, out.data(), t, out_dim, in_dim, in_dim, out_dim,
                        options_.activation_quant},
                       pool);
  };
  for (int l = 0; l < c.num_layers; ++l) {
    const Layer& layer = layers_[l];
    const std::string prefix = absl::StrCat("layer", l, ".");
    norm(layer.attn_norm, /*add_delta=*/l > 0);
    emit(prefix + "attn_norm", h, hidden);
    matmul(h, hidden, layer.q, q_dim, q);
    matmul(h, hidden, layer.k, kv_dim, k);
    matmul(h, hidden, layer.v, kv_dim, v);
    ForRows(pool, t, [&](int64_t r0, int64_t n) {
      kernels::RopeRef({q.data() + r0 * q_dim, cos.data() + r0 * hd / 2, sin.data() + r0 * hd / 2,
                        n, c.num_heads, hd, q_dim});
      kernels::RopeRef({k.data() + r0 * kv_dim, cos.data() + r0 * hd / 2, sin.data() + r0 * hd / 2,
                        n, c.num_kv_heads, hd, kv_dim});
    });
    emit(prefix + "q", q, q_dim);
    emit(prefix + "k", k, kv_dim);
    emit(prefix + "v", v, kv_dim);
    const kernels::PagedKvLayer cache = KvLayer(l);
    // Every row's K/V is written before any row attends, so rows of one step may read blocks
    // another row of the same step fills (a prefix published to the tree this step).
    kernels::PagedKvAppendRef({batch, cache, k.data(), v.data(), kv_dim, kv_dim});
    const bool scores_here = any_scores && l == c.num_layers - 1;
    kernels::PagedAttentionRef({batch, cache, q.data(), attn.data(), q_dim, q_dim, c.num_heads,
                                static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd))),
                                scores_here ? last_scores.data() : nullptr},
                               pool);
    emit(prefix + "attn", attn, q_dim);
    matmul(attn, q_dim, layer.o, hidden, delta);
    emit(prefix + "attn_out", delta, hidden);
    norm(layer.mlp_norm, /*add_delta=*/true);
    emit(prefix + "attn_residual", x, hidden);
    emit(prefix + "mlp_norm", h, hidden);
    matmul(h, hidden, layer.gate, ffn, gate);
    matmul(h, hidden, layer.up, ffn, up);
    ForRows(pool, t, [&](int64_t r0, int64_t n) {
      kernels::SwigluRef({gate.data() + r0 * ffn, up.data() + r0 * ffn, gate.data() + r0 * ffn, n,
                          ffn, ffn, ffn, ffn});
    });
    emit(prefix + "mlp_act", gate, ffn);
    matmul(gate, ffn, layer.down, hidden, delta);
    emit(prefix + "mlp_out", delta, hidden);
  }
  norm(final_norm_, /*add_delta=*/true);
  emit("final_norm", h, hidden);

  if (!logit_rows.empty()) {
    const int64_t vocab = c.vocab_size;
    std::vector<float> logits(logit_rows.size() * vocab);
    kernels::LogitsRef({h.data(), logit_rows.data(), lm_head_.data, lm_head_.type, logits.data(),
                        static_cast<int64_t>(logit_rows.size()), hidden, vocab, hidden, vocab,
                        options_.activation_quant},
                       pool);
    if (tap) tap("logits", logits.data(), static_cast<int64_t>(logit_rows.size()), vocab);
    std::vector<size_t> reduced;  // Rows with a reduction.
    std::vector<const float*> row_logits(rows.size());
    size_t next = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      const ForwardRow& row = rows[r];
      if (row.logits == nullptr && row.reduction == nullptr) continue;
      row_logits[r] = logits.data() + next++ * vocab;
      if (row.logits != nullptr) std::copy_n(row_logits[r], vocab, row.logits);
      if (row.reduction != nullptr) reduced.push_back(r);
    }
    HostParallelFor(static_cast<int64_t>(reduced.size()), [&](int64_t i) {
      const size_t r = reduced[i];
      const ForwardRow& row = rows[r];
      ReduceRowOnHost(absl::MakeConstSpan(row_logits[r], vocab), last_scores[r], c.num_heads,
                      row.start_pos + static_cast<int>(row.tokens.size()), *row.reduction);
    });
  }
  return absl::OkStatus();
}

void CpuBackend::HostParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  pool_->ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace arbor::worker
