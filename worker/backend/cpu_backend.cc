#include "worker/backend/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/bf16.h"
#include "base/page_out.h"
#include "base/status_macros.h"
#include "base/zero_pages.h"
#include "kernels/bias_add.h"
#include "kernels/embedding.h"
#include "kernels/logits.h"
#include "kernels/matmul.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_kv_append.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_matmul.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "model/llama_tensors.h"
#include "worker/backend/forward_rows.h"
#include "worker/backend/layer_recipe.h"
#include "worker/backend/weights.h"

namespace arbor::worker {
namespace {

using kernels::WeightType;

const std::vector<float> kNoBias;

// The most logits ProjectAndReduce keeps between steps (32 MiB: 64 rows of a 128,256-token
// vocabulary); a larger step's are given back after it.
constexpr size_t kKeptLogitFloats = size_t{1} << 23;

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

absl::StatusOr<CpuBackend::Matrix> CpuBackend::LoadProjection(const TensorLookup& lookup,
                                                              const std::string& name, int64_t rows,
                                                              int64_t cols) {
  ASSIGN_OR_RETURN(const Matrix matrix, LoadMatrix(lookup, name, rows, cols));
  ASSIGN_OR_RETURN(const Matrix repacked, Repacked(matrix, rows, cols));
  if (repacked.data != matrix.data && !converted_.empty() &&
      converted_.back().data() == matrix.data) {
    // Converted at load (--weights_dtype): only the repacked copy is read from now on.
    converted_bytes_ -= static_cast<int64_t>(converted_.back().size());
    converted_.pop_back();
  }
  return repacked;
}

absl::StatusOr<CpuBackend::Matrix> CpuBackend::Repacked(const Matrix& matrix, int64_t rows,
                                                        int64_t cols) {
  // In either numerics, AMX CPUs included: per matmul the repacked rows' kernels ran 1.1–3.5× the
  // file blocks' (AMX tiles from 12 rows under --numerics=fast) at 12–256 rows, Q8_0 at 256 rows
  // excepted (0.9×); docs/PERFORMANCE.md.
  if (options_.activation_quant != kernels::ActivationQuant::kQ8 ||
      !kernels::Repackable(matrix.type, rows, cols) || !kernels::CpuRunsRepacked()) {
    return matrix;
  }
  // Every step streams the copy whole: in huge pages (base/huge_page_arena.h), a step's ~200k
  // page walks of a 1B model's small pages go.
  const int64_t bytes = kernels::RepackedBytes(matrix.type, rows, cols);
  ASSIGN_OR_RETURN(char* copy, weight_arena_.Allocate(static_cast<size_t>(bytes)));
  kernels::RepackRowsInto(matrix.type, matrix.data, rows, cols, copy);
  ++repacked_matrices_;
  converted_bytes_ += bytes;
  const int64_t source_bytes = rows * model::RowBytes(kernels::FileDType(matrix.type), cols);
  weight_bytes_ += bytes - source_bytes;  // A step streams the copy instead.
  // The matmuls read only the copy from now on: the checkpoint's pages of the source leave the
  // resident set (a conversion's copy is freed by LoadProjection instead). A tied output head's
  // rows are still read by the embedding lookup, a few per step, and come back from the file as
  // it touches them.
  const bool converted =
      std::any_of(converted_.begin(), converted_.end(),
                  [&](const std::vector<char>& c) { return c.data() == matrix.data; });
  if (!converted) base::PageOut(matrix.data, source_bytes);
  return Matrix{copy, kernels::RepackedType(matrix.type)};
}

std::string CpuBackend::weight_types() const {
  std::string out;
  for (const auto& [name, count] : type_counts_) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", name, " ×", count);
  }
  if (repacked_matrices_ > 0) {
    absl::StrAppend(&out, " (", repacked_matrices_, " repacked in groups of rows)");
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
  // The embedding rows stay as they are (looked up one at a time); the head, read whole by every
  // step's logits, may be repacked (a tied one is then a second copy).
  ASSIGN_OR_RETURN(lm_head_, Repacked(lm_head_, c.vocab_size, hidden));
  ASSIGN_OR_RETURN(final_norm_, LoadVector(lookup, model::kFinalNormName, hidden));
  layers_.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const model::LlamaLayerNames n = model::LlamaLayerTensorNames(l);
    Layer& layer = layers_[l];
    ASSIGN_OR_RETURN(layer.attn_norm, LoadVector(lookup, n.attn_norm, hidden));
    ASSIGN_OR_RETURN(layer.mlp_norm, LoadVector(lookup, n.mlp_norm, hidden));
    ASSIGN_OR_RETURN(layer.q, LoadProjection(lookup, n.q, q_dim, hidden));
    ASSIGN_OR_RETURN(layer.k, LoadProjection(lookup, n.k, kv_dim, hidden));
    ASSIGN_OR_RETURN(layer.v, LoadProjection(lookup, n.v, kv_dim, hidden));
    if (c.qkv_bias()) {
      ASSIGN_OR_RETURN(layer.q_bias, LoadVector(lookup, n.q_bias, q_dim));
      ASSIGN_OR_RETURN(layer.k_bias, LoadVector(lookup, n.k_bias, kv_dim));
      ASSIGN_OR_RETURN(layer.v_bias, LoadVector(lookup, n.v_bias, kv_dim));
    }
    if (model::Describe(c.architecture).qk_norm) {
      ASSIGN_OR_RETURN(layer.q_norm, LoadVector(lookup, n.q_norm, c.head_dim));
      ASSIGN_OR_RETURN(layer.k_norm, LoadVector(lookup, n.k_norm, c.head_dim));
    }
    ASSIGN_OR_RETURN(layer.o, LoadProjection(lookup, n.o, hidden, q_dim));
    ASSIGN_OR_RETURN(layer.gate, LoadProjection(lookup, n.gate, ffn, hidden));
    ASSIGN_OR_RETURN(layer.up, LoadProjection(lookup, n.up, ffn, hidden));
    ASSIGN_OR_RETURN(layer.down, LoadProjection(lookup, n.down, hidden, ffn));
  }
  // A decode step reads one embedding row, not the table (unless it doubles as the lm_head).
  if (!c.tie_word_embeddings) weight_bytes_ -= embed_bytes;
  inv_freq_ = kernels::RopeInvFreq(c.rope_theta, c.head_dim, RopeScalingParamsOf(c.rope_scaling));
  const size_t pool_bytes = static_cast<size_t>(options_.kv_blocks) * options_.block_size * kv_dim *
                            KvDtypeBytes(options_.kv_dtype);
  // Mapped, not written: a pool becomes resident only as its blocks are used.
  for (int l = 0; l < c.num_layers; ++l) {
    ASSIGN_OR_RETURN(base::ZeroPages k, base::ZeroPages::Map(pool_bytes));
    ASSIGN_OR_RETURN(base::ZeroPages v, base::ZeroPages::Map(pool_bytes));
    k_cache_.push_back(std::move(k));
    v_cache_.push_back(std::move(v));
  }
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
      for (base::ZeroPages* cache : {&k_cache_[l], &v_cache_[l]}) {
        char* base = cache->data();
        std::memmove(base + c.dst * block_bytes, base + c.src * block_bytes,
                     static_cast<size_t>(c.num_tokens * slot_bytes));
      }
    }
  }
  return absl::OkStatus();
}

// One step's batch, score rows and activations; x is the residual stream.
struct CpuBackend::Step {
  StepBatch batch;
  int64_t t = 0;
  std::vector<float*> last_scores;  // Per row: where its last-layer scores go, or null.
  bool any_scores = false;
  std::vector<float> own_scores;  // Score rows of reductions whose caller asked for none.
  std::vector<float> x, h, q, k, v, attn, delta, gate, up, cos, sin;
  const TensorTap* tap = nullptr;

  void Emit(std::string_view name, const std::vector<float>& data, int64_t cols) const {
    if (*tap) (*tap)(name, data.data(), t, cols);
  }
};

// The layer recipe's steps (layer_recipe.h) over one step's rows.
class CpuBackend::LayerOps {
 public:
  LayerOps(CpuBackend& backend, Step& step)
      : b_(backend), s_(step), c_(backend.config_), q_dim_(c_.num_heads * c_.head_dim),
        kv_dim_(c_.num_kv_heads * c_.head_dim) {}

  absl::Status AttentionNorm(int l) {
    b_.Norm(s_, b_.layers_[l].attn_norm, /*add_delta=*/l > 0);
    return absl::OkStatus();
  }
  absl::Status ProjectQkv(int l, bool bias) {
    const Layer& layer = b_.layers_[l];
    b_.Project(s_, s_.h, c_.hidden_size,
               {{layer.q, q_dim_, s_.q, bias ? layer.q_bias : kNoBias},
                {layer.k, kv_dim_, s_.k, bias ? layer.k_bias : kNoBias},
                {layer.v, kv_dim_, s_.v, bias ? layer.v_bias : kNoBias}});
    return absl::OkStatus();
  }
  absl::Status RotateQk(int l, bool head_norm) {
    const Layer& layer = b_.layers_[l];
    const int64_t hd = c_.head_dim;
    ForRows(b_.pool_.get(), s_.t, [&](int64_t r0, int64_t n) {
      if (head_norm) {
        // Each head of a token is one norm row of head_dim, so a token's result depends on
        // nothing else in the step.
        auto norm_heads = [&](float* x, int64_t heads, const std::vector<float>& weight) {
          kernels::RmsNormRef(
              {x, nullptr, weight.data(), x, n * heads, hd, hd, hd, hd, c_.rms_norm_eps});
        };
        norm_heads(s_.q.data() + r0 * q_dim_, c_.num_heads, layer.q_norm);
        norm_heads(s_.k.data() + r0 * kv_dim_, c_.num_kv_heads, layer.k_norm);
      }
      const float* cos = s_.cos.data() + r0 * hd / 2;
      const float* sin = s_.sin.data() + r0 * hd / 2;
      kernels::RopeRef({s_.q.data() + r0 * q_dim_, cos, sin, n, c_.num_heads, hd, q_dim_});
      kernels::RopeRef({s_.k.data() + r0 * kv_dim_, cos, sin, n, c_.num_kv_heads, hd, kv_dim_});
    });
    return absl::OkStatus();
  }
  absl::Status Attend(int l) {
    const kernels::PagedKvLayer cache = b_.KvLayer(l);
    const kernels::PagedBatch batch = s_.batch.View();
    // Every row's K/V is written before any row attends, so rows of one step may read blocks
    // another row of the same step fills (a prefix published to the tree this step).
    kernels::PagedKvAppendRef({batch, cache, s_.k.data(), s_.v.data(), kv_dim_, kv_dim_});
    const bool scores_here = s_.any_scores && l == c_.num_layers - 1;
    kernels::PagedAttentionRef(
        {batch, cache, s_.q.data(), s_.attn.data(), q_dim_, q_dim_, c_.num_heads,
         static_cast<float>(1.0 / std::sqrt(static_cast<double>(c_.head_dim))),
         scores_here ? s_.last_scores.data() : nullptr},
        b_.pool_.get());
    return absl::OkStatus();
  }
  absl::Status ProjectOut(int l) {
    b_.Project(s_, s_.attn, q_dim_, {{b_.layers_[l].o, c_.hidden_size, s_.delta, kNoBias}});
    return absl::OkStatus();
  }
  absl::Status MlpNorm(int l) {
    b_.Norm(s_, b_.layers_[l].mlp_norm, /*add_delta=*/true);
    return absl::OkStatus();
  }
  absl::Status ProjectGateUp(int l) {
    const Layer& layer = b_.layers_[l];
    const int64_t ffn = c_.intermediate_size;
    b_.Project(s_, s_.h, c_.hidden_size,
               {{layer.gate, ffn, s_.gate, kNoBias}, {layer.up, ffn, s_.up, kNoBias}});
    return absl::OkStatus();
  }
  absl::Status Swiglu() {
    const int64_t ffn = c_.intermediate_size;
    ForRows(b_.pool_.get(), s_.t, [&](int64_t r0, int64_t n) {
      float* gate = s_.gate.data() + r0 * ffn;
      kernels::SwigluRef({gate, s_.up.data() + r0 * ffn, gate, n, ffn, ffn, ffn, ffn});
    });
    return absl::OkStatus();
  }
  absl::Status ProjectDown(int l) {
    b_.Project(s_, s_.gate, c_.intermediate_size,
               {{b_.layers_[l].down, c_.hidden_size, s_.delta, kNoBias}});
    return absl::OkStatus();
  }
  bool tapped() const { return static_cast<bool>(*s_.tap); }
  absl::Status Emit(std::string_view name, LayerTensor tensor) {
    const int64_t hidden = c_.hidden_size;
    switch (tensor) {
      case LayerTensor::kNormed: s_.Emit(name, s_.h, hidden); break;
      case LayerTensor::kQ: s_.Emit(name, s_.q, q_dim_); break;
      case LayerTensor::kK: s_.Emit(name, s_.k, kv_dim_); break;
      case LayerTensor::kV: s_.Emit(name, s_.v, kv_dim_); break;
      case LayerTensor::kAttention: s_.Emit(name, s_.attn, q_dim_); break;
      case LayerTensor::kDelta: s_.Emit(name, s_.delta, hidden); break;
      case LayerTensor::kResidual: s_.Emit(name, s_.x, hidden); break;
      case LayerTensor::kActivation: s_.Emit(name, s_.gate, c_.intermediate_size); break;
    }
    return absl::OkStatus();
  }

 private:
  CpuBackend& b_;
  Step& s_;
  const model::ModelConfig& c_;
  const int64_t q_dim_, kv_dim_;
};

CpuBackend::Step CpuBackend::PrepareStep(std::span<const ForwardRow> rows,
                                         const TensorTap& tap) const {
  const model::ModelConfig& c = config_;
  Step s;
  s.batch = MakeStepBatch(rows, options_.block_size);
  s.t = s.batch.num_tokens();
  s.tap = &tap;
  std::vector<size_t> own_at(rows.size());
  size_t own = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].reduction == nullptr || rows[r].last_scores != nullptr) continue;
    own_at[r] = own;
    own += static_cast<size_t>(c.num_heads) * s.batch.kv_len[r];
  }
  s.own_scores.resize(own);
  for (size_t r = 0; r < rows.size(); ++r) {
    float* row_scores = rows[r].last_scores;
    if (rows[r].reduction != nullptr && row_scores == nullptr) {
      row_scores = s.own_scores.data() + own_at[r];
    }
    s.last_scores.push_back(row_scores);
    s.any_scores |= row_scores != nullptr;
  }
  const int64_t t = s.t, hidden = c.hidden_size, ffn = c.intermediate_size, hd = c.head_dim;
  const int64_t q_dim = c.num_heads * hd, kv_dim = c.num_kv_heads * hd;
  for (auto [buffer, cols] : {std::pair{&s.x, hidden},
                              {&s.h, hidden},
                              {&s.q, q_dim},
                              {&s.k, kv_dim},
                              {&s.v, kv_dim},
                              {&s.attn, q_dim},
                              {&s.delta, hidden},
                              {&s.gate, ffn},
                              {&s.up, ffn},
                              {&s.cos, hd / 2},
                              {&s.sin, hd / 2}}) {
    buffer->resize(t * cols);
  }
  return s;
}

absl::Status CpuBackend::Forward(std::span<const ForwardRow> rows, const TensorTap& tap) {
  RETURN_IF_ERROR(
      ValidateForwardRows(rows, config_.vocab_size, options_.block_size, options_.kv_blocks));
  const model::ModelConfig& c = config_;
  Step s = PrepareStep(rows, tap);
  kernels::EmbeddingRef({s.batch.tokens.data(), embed_.data, embed_.type, s.x.data(), s.t,
                         c.vocab_size, c.hidden_size, c.hidden_size});
  s.Emit("embed", s.x, c.hidden_size);
  kernels::RopeCosSinRef(
      {s.batch.positions.data(), inv_freq_.data(), s.cos.data(), s.sin.data(), s.t, c.head_dim});
  LayerOps ops(*this, s);
  for (int l = 0; l < c.num_layers; ++l) RETURN_IF_ERROR(RunLayer(c, l, ops));
  Norm(s, final_norm_, /*add_delta=*/true);
  s.Emit("final_norm", s.h, c.hidden_size);
  if (!s.batch.logit_rows.empty()) ProjectAndReduce(rows, s);
  return absl::OkStatus();
}

void CpuBackend::Norm(Step& s, const std::vector<float>& weight, bool add_delta) {
  // Every norm after the first also adds the previous sublayer's output (delta) into x, fused.
  const int64_t hidden = config_.hidden_size;
  ForRows(pool_.get(), s.t, [&](int64_t r0, int64_t n) {
    kernels::RmsNormRef({add_delta ? s.delta.data() + r0 * hidden : s.x.data() + r0 * hidden,
                         add_delta ? s.x.data() + r0 * hidden : nullptr, weight.data(),
                         s.h.data() + r0 * hidden, n, hidden, hidden, hidden, hidden,
                         config_.rms_norm_eps});
  });
}

void CpuBackend::Project(const Step& s, const std::vector<float>& in, int64_t in_dim,
                         std::initializer_list<Projection> projections) {
  absl::InlinedVector<kernels::MatmulOutput, 3> outputs;
  for (const Projection& p : projections) {
    outputs.push_back({p.w.data, p.w.type, p.out.data(), p.out_dim, p.out_dim});
  }
  kernels::MatmulParams shared{.x = in.data(),
                               .m = s.t,
                               .k = in_dim,
                               .x_stride = in_dim,
                               .activation_quant = options_.activation_quant,
                               .batch_invariant = options_.batch_invariant};
  kernels::MatmulGroupRef(shared, outputs, pool_.get());
  for (const Projection& p : projections) {
    if (p.bias.empty()) continue;
    ForRows(pool_.get(), s.t, [&](int64_t r0, int64_t n) {
      kernels::BiasAddRef({p.out.data() + r0 * p.out_dim, p.bias.data(), n, p.out_dim, p.out_dim});
    });
  }
}

void CpuBackend::ProjectAndReduce(std::span<const ForwardRow> rows, const Step& s) {
  const model::ModelConfig& c = config_;
  const int64_t vocab = c.vocab_size, num_logits = static_cast<int64_t>(s.batch.logit_rows.size());
  // Kept per thread between steps, as the attention's panels are, so that a step neither zeroes
  // its rows before computing them nor, past the allocator's mapping threshold, maps and faults
  // them in afresh (10 µs of a one-row SmolLM2 step). Named by a reference, which the reductions
  // on the pool's threads then share.
  thread_local std::vector<float> kept;
  std::vector<float>& logits = kept;
  if (static_cast<int64_t>(logits.size()) < num_logits * vocab) logits.resize(num_logits * vocab);
  kernels::LogitsRef({s.h.data(), s.batch.logit_rows.data(), lm_head_.data, lm_head_.type,
                      logits.data(), num_logits, c.hidden_size, vocab, c.hidden_size, vocab,
                      options_.activation_quant, options_.batch_invariant},
                     pool_.get());
  if (*s.tap) (*s.tap)("logits", logits.data(), num_logits, vocab);
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
  auto reduce = [&](size_t r, const entropix::RowSplit& split) {
    ReduceRowOnHost(absl::MakeConstSpan(row_logits[r], vocab), s.last_scores[r], c.num_heads,
                    s.batch.kv_len[r], *rows[r].reduction, split);
  };
  if (reduced.size() == 1 && pool_->num_threads() > 1) {
    // A lone row (one stream's decode step) shares its vocabulary among the threads, which
    // would otherwise wait for it.
    reduce(reduced[0], RowSplitOn(*pool_));
  } else {
    HostParallelFor(static_cast<int64_t>(reduced.size()),
                    [&](int64_t i) { reduce(reduced[i], {}); });
  }
  if (logits.capacity() > kKeptLogitFloats) logits = std::vector<float>();
}

void CpuBackend::HostParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  pool_->ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace arbor::worker
