#include "worker/backend/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "kernels/bias_add_cuda.h"
#include "kernels/cuda/cuda_graph_cache.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/embedding_cuda.h"
#include "kernels/gemv_cuda.h"
#include "kernels/invariant_gemm_cuda.h"
#include "kernels/paged_attention_cuda.h"
#include "kernels/paged_kv_append_cuda.h"
#include "kernels/rms_norm_cuda.h"
#include "kernels/rope_cuda.h"
#include "kernels/swiglu_cuda.h"
#include "worker/backend/cascade_plan.h"
#include "worker/backend/forward_rows.h"
#include "worker/backend/layer_recipe.h"

namespace arbor::worker {
namespace {

using kernels::CudaStatus;
using kernels::WeightType;

#define RETURN_IF_CUDA(expr, what) RETURN_IF_ERROR(CudaStatus((expr), (what)))

// Whether every projection's input width (its k) suits the GEMV and the batch-invariant GEMM,
// which read 8 values per load.
bool WidthsFitEightWide(const model::ModelConfig& c) {
  return c.hidden_size % 8 == 0 && c.num_heads * c.head_dim % 8 == 0 &&
         c.intermediate_size % 8 == 0;
}

absl::Status InvariantWidthsFit(const model::ModelConfig& c) {
  if (WidthsFitEightWide(c)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "model config of '", c.name, "': the batch-invariant CUDA GEMM needs hidden_size, ",
      "num_attention_heads × head_dim and intermediate_size to be multiples of 8 (this one: ",
      c.hidden_size, ", ", c.num_heads * c.head_dim, ", ", c.intermediate_size,
      "); serve it with --numerics=fast"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    const model::ModelConfig& c, const TensorLookup& lookup, const CudaBackendOptions& options) {
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.head_dim <= 0 || c.vocab_size <= 0 ||
      c.num_heads % c.num_kv_heads != 0 || c.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config of '", c.name,
                     "': sizes must be positive, num_attention_heads a multiple "
                     "of num_key_value_heads and head_dim even"));
  }
  if (c.num_heads / c.num_kv_heads > 8 || c.head_dim > 256 || c.head_dim % 8 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config of '", c.name,
                     "': the CUDA attention serves at most 8 query heads per kv "
                     "head and a head_dim that is a multiple of 8 up to 256 (this one: ",
                     c.num_heads / c.num_kv_heads, " and ", c.head_dim, ")"));
  }
  if (options.batch_invariant) RETURN_IF_ERROR(InvariantWidthsFit(c));
  if (options.kv_blocks <= 0 || options.block_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("KV cache: kv_blocks (", options.kv_blocks,
                                                   ") and block_size (", options.block_size,
                                                   ") must be positive"));
  }
  if (kernels::CudaDeviceCount() <= options.device || options.device < 0) {
    return absl::FailedPreconditionError(absl::StrCat("device cuda:", options.device,
                                                      " requested, ", kernels::CudaDeviceCount(),
                                                      " CUDA devices present"));
  }
  std::unique_ptr<CudaBackend> backend(new CudaBackend(c, options));
  ASSIGN_OR_RETURN(backend->context_, kernels::CudaContext::Create(options.device));
  backend->reducer_ =
      std::make_unique<CudaRowReducer>(backend->context_.get(), c.vocab_size, c.num_heads);
  RETURN_IF_ERROR(backend->Load(lookup));
  return backend;
}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    std::shared_ptr<const model::Checkpoint> checkpoint, const CudaBackendOptions& options) {
  // Weights are copied to the device, so the checkpoint is needed only while loading.
  const model::Checkpoint* ckpt = checkpoint.get();
  return Create(
      ckpt->config(), [ckpt](const std::string& name) { return ckpt->Tensor(name); }, options);
}

CudaBackend::~CudaBackend() {
  if (context_ == nullptr) return;
  cudaSetDevice(context_->device());  // May run on any thread (see CudaContext::Bind).
  cudaStreamSynchronize(context_->stream());
  for (void* p : allocations_) cudaFree(p);
  // The step buffers free themselves afterwards, on this thread, the device still bound.
}

absl::Status CudaBackend::set_batch_invariant(bool on) {
  if (on) RETURN_IF_ERROR(InvariantWidthsFit(config_));
  options_.batch_invariant = on;
  return absl::OkStatus();
}

kernels::PagedKvLayer CudaBackend::KvLayer(int layer) const {
  return KvPools(options_.kv_dtype, k_cache_[layer], v_cache_[layer],
                 {nullptr, nullptr, options_.kv_blocks, options_.block_size, config_.num_kv_heads,
                  config_.head_dim});
}

absl::Status CudaBackend::CopyKvBlocks(std::span<const BlockCopy> copies) {
  RETURN_IF_ERROR(context_->Bind());
  const int64_t width = int64_t{config_.num_kv_heads} * config_.head_dim;
  RETURN_IF_ERROR(ValidateBlockCopies(copies, options_.block_size, options_.kv_blocks));
  const int64_t slot_bytes = width * KvDtypeBytes(options_.kv_dtype);
  const int64_t block_bytes = int64_t{options_.block_size} * slot_bytes;
  for (const BlockCopy& c : copies) {
    const size_t bytes = static_cast<size_t>(c.num_tokens * slot_bytes);
    for (int l = 0; l < config_.num_layers; ++l) {
      for (void* pool : {k_cache_[l], v_cache_[l]}) {
        char* base = static_cast<char*>(pool);
        RETURN_IF_CUDA(cudaMemcpyAsync(base + c.dst * block_bytes, base + c.src * block_bytes,
                                       bytes, cudaMemcpyDeviceToDevice, context_->stream()),
                       "KV block copy");
      }
    }
  }
  // Copies run in stream order before the next step; no host wait is needed here.
  return absl::OkStatus();
}

absl::Status CudaBackend::Forward(std::span<const ForwardRow> rows, const TensorTap& tap) {
  RETURN_IF_ERROR(
      ValidateForwardRows(rows, config_.vocab_size, options_.block_size, options_.kv_blocks));
  if (rows.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(context_->Bind());
  // Reductions the device does not serve (more candidates than its top-K keeps) are computed on
  // the host from the full rows, which the step then downloads for them.
  std::vector<ForwardRow> step(rows.begin(), rows.end());
  std::vector<size_t> on_host;
  std::vector<std::vector<float>> host_logits(rows.size()), host_scores(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].reduction == nullptr || CudaRowReducer::Serves(rows[r].reduction->request)) {
      continue;
    }
    on_host.push_back(r);
    step[r].reduction = nullptr;
    if (step[r].logits == nullptr) {
      host_logits[r].resize(config_.vocab_size);
      step[r].logits = host_logits[r].data();
    }
    if (step[r].last_scores == nullptr) {
      host_scores[r].resize(static_cast<size_t>(config_.num_heads) *
                            (rows[r].start_pos + rows[r].tokens.size()));
      step[r].last_scores = host_scores[r].data();
    }
  }
  RETURN_IF_ERROR(Step(step, tap));
  for (size_t r : on_host) {
    const int keys = rows[r].start_pos + static_cast<int>(rows[r].tokens.size());
    ReduceRowOnHost(absl::MakeConstSpan(step[r].logits, config_.vocab_size), step[r].last_scores,
                    config_.num_heads, keys, *rows[r].reduction);
  }
  return absl::OkStatus();
}

// A step's device-side layout: the batch (uploaded), activations and outputs.
struct CudaBackend::StepPlan {
  StepBatch host;
  kernels::PagedBatch batch;  // Device pointers into batch_.
  const int32_t *tokens = nullptr, *positions = nullptr, *logit_rows = nullptr;
  int64_t t = 0, num_logits = 0, splits = 1;
  CascadePlan cascade_plan;        // Empty: no cascade this step.
  kernels::CascadeGroups cascade;  // Its device arrays (num_groups 0: none).
  // Few rows and no tap: RMSNorms and residual adds folded into the GEMVs (gemv_cuda.h), so h
  // and delta are never written; x is the residual stream throughout.
  bool fused = false;
  float *x = nullptr, *h = nullptr, *qkv = nullptr, *attn = nullptr, *delta = nullptr,
        *gate_up = nullptr, *act = nullptr, *cos = nullptr, *sin = nullptr;
  float* logits = nullptr;              // [num_logits, vocab]
  float* workspace = nullptr;           // Attention split-K partials.
  float* const* score_table = nullptr;  // Per sequence: its last-layer score rows, or null.
  std::vector<int64_t> score_offsets;   // Per sequence: offset into scores_, or −1.
  std::vector<CudaRowReducer::Row> reduced;
};

absl::Status CudaBackend::UploadBatch(StepPlan& plan) {
  // Fixed-size arrays first and the block ids last, so that every array but the last sits at an
  // offset that depends only on the batch's shape — what a captured graph bakes in.
  const StepBatch& b = plan.host;
  std::vector<int32_t> packed;
  auto pack = [&packed](const std::vector<int32_t>& v) {
    const size_t offset = packed.size();
    packed.insert(packed.end(), v.begin(), v.end());
    return offset;
  };
  const size_t o_q_start = pack(b.q_start), o_kv_len = pack(b.kv_len),
               o_block_start = pack(b.block_start), o_tokens = pack(b.tokens),
               o_positions = pack(b.positions), o_logit_rows = pack(b.logit_rows);
  const CascadePlan& cp = plan.cascade_plan;
  const size_t o_group_start = pack(cp.group_start), o_group_tokens = pack(cp.tokens),
               o_group_seq = pack(cp.seq), o_prefix_len = pack(cp.prefix_len),
               o_key_begin = pack(cp.key_begin), o_block_ids = pack(b.block_ids);
  cudaStream_t stream = context_->stream();
  ASSIGN_OR_RETURN(void* mem, batch_.Grow(packed.size() * sizeof(int32_t), stream, "batch"));
  int32_t* ints = static_cast<int32_t*>(mem);
  RETURN_IF_CUDA(cudaMemcpyAsync(ints, packed.data(), packed.size() * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, stream),
                 "batch upload");
  plan.batch = {static_cast<int64_t>(b.kv_len.size()), ints + o_q_start, ints + o_kv_len,
                ints + o_block_start, ints + o_block_ids};
  plan.tokens = ints + o_tokens;
  plan.positions = ints + o_positions;
  plan.logit_rows = ints + o_logit_rows;
  if (cp.num_groups() > 0) {
    plan.cascade = {cp.num_groups(),    ints + o_group_start, ints + o_group_tokens,
                    ints + o_group_seq, ints + o_prefix_len,  ints + o_key_begin,
                    /*num_splits=*/1,   cp.max_members};
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::CarveActivations(StepPlan& plan) {
  const model::ModelConfig& c = config_;
  const int64_t t = plan.t, hidden = c.hidden_size, ffn = c.intermediate_size, hd = c.head_dim;
  const int64_t q_dim = c.num_heads * hd, qkv_dim = q_dim + 2 * c.num_kv_heads * hd;
  size_t bytes = 0;  // Each array 256-byte aligned, for cuBLASLt and 16-byte loads.
  auto carve = [&bytes](int64_t floats) {
    const size_t offset = bytes;
    bytes += (static_cast<size_t>(floats) * sizeof(float) + 255) / 256 * 256;
    return offset;
  };
  const size_t o_x = carve(t * hidden), o_h = carve(t * hidden), o_qkv = carve(t * qkv_dim),
               o_attn = carve(t * q_dim), o_delta = carve(t * hidden),
               o_gate_up = carve(t * 2 * ffn), o_act = carve(t * ffn), o_cos = carve(t * hd / 2),
               o_sin = carve(t * hd / 2);
  cudaStream_t stream = context_->stream();
  ASSIGN_OR_RETURN(void* mem, activations_.Grow(bytes, stream, "activations"));
  char* base = static_cast<char*>(mem);
  auto at = [base](size_t offset) { return reinterpret_cast<float*>(base + offset); };
  plan.x = at(o_x), plan.h = at(o_h), plan.qkv = at(o_qkv), plan.attn = at(o_attn);
  plan.delta = at(o_delta), plan.gate_up = at(o_gate_up), plan.act = at(o_act);
  plan.cos = at(o_cos), plan.sin = at(o_sin);
  if (plan.num_logits > 0) {
    ASSIGN_OR_RETURN(void* logits, logits_.Grow(plan.num_logits * c.vocab_size * sizeof(float),
                                                stream, "logits"));
    plan.logits = static_cast<float*>(logits);
  }
  plan.splits = options_.batch_invariant
                    ? kernels::InvariantAttentionSplits(plan.host.max_kv_len)
                    : kernels::PagedAttentionSplits(t, c.num_kv_heads, plan.host.max_kv_len,
                                                    context_->multiprocessor_count());
  if (plan.cascade.num_groups > 0) {
    plan.cascade.num_splits =
        kernels::CascadeSplits(plan.cascade.num_groups, c.num_kv_heads,
                               plan.cascade_plan.max_prefix_len, context_->multiprocessor_count());
  }
  const int64_t workspace_floats = kernels::PagedAttentionWorkspaceFloats(
      t, c.num_heads, hd, kernels::TotalSplits({t, plan.splits, nullptr, plan.cascade}));
  ASSIGN_OR_RETURN(void* workspace, attention_workspace_.Grow(workspace_floats * sizeof(float),
                                                              stream, "attention workspace"));
  plan.workspace = static_cast<float*>(workspace);
  // Only cuBLASLt reads narrowed activations from staging; the batch-invariant GEMM narrows as
  // it loads.
  if (options_.batch_invariant) return absl::OkStatus();
  return context_->ReserveStaging(t * std::max(hidden, std::max(q_dim, ffn)));
}

absl::Status CudaBackend::PlaceScores(std::span<const ForwardRow> rows, StepPlan& plan) {
  int64_t score_floats = 0;
  for (size_t s = 0; s < rows.size(); ++s) {
    const bool wants = rows[s].last_scores != nullptr || rows[s].reduction != nullptr;
    plan.score_offsets.push_back(wants ? score_floats : -1);
    if (wants) score_floats += config_.num_heads * int64_t{plan.host.kv_len[s]};
  }
  if (score_floats == 0) return absl::OkStatus();
  cudaStream_t stream = context_->stream();
  ASSIGN_OR_RETURN(void* scores, scores_.Grow(score_floats * sizeof(float), stream, "scores"));
  std::vector<float*> table(rows.size(), nullptr);
  for (size_t s = 0; s < rows.size(); ++s) {
    if (plan.score_offsets[s] >= 0) table[s] = static_cast<float*>(scores) + plan.score_offsets[s];
  }
  ASSIGN_OR_RETURN(void* table_mem,
                   score_table_.Grow(rows.size() * sizeof(float*), stream, "score table"));
  RETURN_IF_CUDA(cudaMemcpyAsync(table_mem, table.data(), rows.size() * sizeof(float*),
                                 cudaMemcpyHostToDevice, stream),
                 "score table upload");
  plan.score_table = static_cast<float* const*>(table_mem);
  return absl::OkStatus();
}

absl::StatusOr<CudaBackend::StepPlan> CudaBackend::PrepareStep(std::span<const ForwardRow> rows,
                                                               bool tapped) {
  StepPlan plan;
  plan.host = MakeStepBatch(rows, options_.block_size);
  plan.t = plan.host.num_tokens();
  plan.fused = !options_.batch_invariant && !tapped && plan.t <= context_->gemv_max_rows() &&
               WidthsFitEightWide(config_) && all_bf16_;
  plan.num_logits = static_cast<int64_t>(plan.host.logit_rows.size());
  int32_t logit_row = 0;
  for (size_t s = 0; s < rows.size(); ++s) {
    if (rows[s].reduction != nullptr) {
      plan.reduced.push_back(
          {rows[s].reduction, logit_row, static_cast<int32_t>(s), plan.host.kv_len[s]});
    }
    if (rows[s].logits != nullptr || rows[s].reduction != nullptr) ++logit_row;
  }
  if (options_.cascade && !options_.batch_invariant) {  // A group's merge order is its own.
    const auto max_members =
        static_cast<int32_t>(kernels::CascadeMaxMembers(config_.num_heads / config_.num_kv_heads));
    plan.cascade_plan =
        PlanCascade(plan.host, options_.block_size, max_members,
                    options_.cascade_min_members > 0 ? options_.cascade_min_members : max_members);
  }
  RETURN_IF_ERROR(UploadBatch(plan));
  RETURN_IF_ERROR(CarveActivations(plan));
  RETURN_IF_ERROR(PlaceScores(rows, plan));
  return plan;
}

absl::Status CudaBackend::Emit(const StepPlan& plan, const TensorTap& tap, std::string_view name,
                               const float* data, int64_t cols, int64_t stride) {
  if (!tap) return absl::OkStatus();
  cudaStream_t stream = context_->stream();
  std::vector<float> host(plan.t * cols);
  RETURN_IF_CUDA(cudaMemcpy2DAsync(host.data(), cols * sizeof(float), data, stride * sizeof(float),
                                   cols * sizeof(float), plan.t, cudaMemcpyDeviceToHost, stream),
                 "tap copy");
  RETURN_IF_CUDA(cudaStreamSynchronize(stream), "tap copy");
  tap(name, host.data(), plan.t, cols);
  return absl::OkStatus();
}

absl::StatusOr<const float*> CudaBackend::NormInput(const StepPlan& plan, const float* weight,
                                                    bool add_delta) {
  if (plan.fused) return plan.x;
  const int64_t hidden = config_.hidden_size;
  RETURN_IF_CUDA(
      kernels::LaunchRmsNorm({add_delta ? plan.delta : plan.x, add_delta ? plan.x : nullptr, weight,
                              plan.h, plan.t, hidden, hidden, hidden, hidden, config_.rms_norm_eps},
                             context_->stream()),
      "rms_norm");
  return plan.h;
}

absl::Status CudaBackend::Gemv(const StepPlan& plan, const float* in, int64_t in_dim,
                               const Matrix& w, int64_t out_dim, float* out,
                               const float* norm_weight, const int32_t* rows, int64_t m) {
  kernels::GemvParams p{
      in, rows, static_cast<const uint16_t*>(w.data), out, m, out_dim, in_dim, in_dim, out_dim};
  p.norm_weight = norm_weight;
  p.norm_eps = config_.rms_norm_eps;
  p.accumulate = out == plan.x;
  return CudaStatus(kernels::LaunchGemvBf16(p, context_->stream()), "gemv");
}

absl::Status CudaBackend::Project(const StepPlan& plan, const float* in, int64_t in_dim,
                                  const Matrix& w, int64_t out_dim, float* out,
                                  const float* norm_weight) {
  if (plan.fused) return Gemv(plan, in, in_dim, w, out_dim, out, norm_weight, nullptr, plan.t);
  return context_->Matmul({.x = in,
                           .w = w.data,
                           .w_type = w.type,
                           .out = out,
                           .m = plan.t,
                           .n = out_dim,
                           .k = in_dim,
                           .x_stride = in_dim,
                           .out_stride = out_dim,
                           .batch_invariant = options_.batch_invariant});
}

absl::Status CudaBackend::ProjectResidual(const StepPlan& plan, const float* in, int64_t in_dim,
                                          const Matrix& w) {
  return Project(plan, in, in_dim, w, config_.hidden_size, plan.fused ? plan.x : plan.delta,
                 nullptr);
}

// The layer recipe's steps (layer_recipe.h) as launches on the backend's stream. A norm only
// chooses the next projection's input: on fused steps the GEMV normalises x itself.
class CudaBackend::LayerOps {
 public:
  LayerOps(CudaBackend& backend, const StepPlan& plan, const TensorTap& tap)
      : b_(backend), plan_(plan), tap_(tap), c_(backend.config_),
        q_dim_(c_.num_heads * c_.head_dim), kv_dim_(c_.num_kv_heads * c_.head_dim),
        qkv_dim_(q_dim_ + 2 * kv_dim_), stream_(backend.context_->stream()) {}

  absl::Status AttentionNorm(int l) {
    ASSIGN_OR_RETURN(in_, b_.NormInput(plan_, b_.layers_[l].attn_norm, /*add_delta=*/l > 0));
    return absl::OkStatus();
  }
  absl::Status ProjectQkv(int l, bool bias) {
    const Layer& layer = b_.layers_[l];
    RETURN_IF_ERROR(b_.Project(plan_, in_, c_.hidden_size, layer.qkv, qkv_dim_, plan_.qkv,
                               layer.attn_norm));
    if (!bias) return absl::OkStatus();
    RETURN_IF_CUDA(kernels::LaunchBiasAdd(
                       {plan_.qkv, layer.qkv_bias, plan_.t, qkv_dim_, qkv_dim_}, stream_),
                   "qkv bias");
    return absl::OkStatus();
  }
  absl::Status RotateQk(int l, bool head_norm) {
    // The k heads follow the q heads in each qkv row: one launch over both.
    const kernels::RopeParams rope{.x = plan_.qkv,
                                   .cos = plan_.cos,
                                   .sin = plan_.sin,
                                   .num_tokens = plan_.t,
                                   .num_heads = c_.num_heads + c_.num_kv_heads,
                                   .head_dim = c_.head_dim,
                                   .token_stride = qkv_dim_};
    const float* norm = b_.layers_[l].qk_norm;
    RETURN_IF_CUDA(head_norm ? kernels::LaunchNormRope(rope,
                                                       {norm, norm + c_.head_dim, c_.num_heads,
                                                        c_.rms_norm_eps},
                                                       stream_)
                             : kernels::LaunchRope(rope, stream_),
                   "rope q, k");
    return absl::OkStatus();
  }
  absl::Status Attend(int l) {
    const kernels::PagedKvLayer cache = b_.KvLayer(l);
    float* k = plan_.qkv + q_dim_;
    // Every row's K/V is written before any row attends (as on the CPU): rows of one step may
    // read blocks another row fills.
    RETURN_IF_CUDA(kernels::LaunchPagedKvAppend(
                       {plan_.batch, cache, k, k + kv_dim_, qkv_dim_, qkv_dim_}, plan_.t, stream_),
                   "kv append");
    const bool scores_here = plan_.score_table != nullptr && l == c_.num_layers - 1;
    RETURN_IF_CUDA(
        kernels::LaunchPagedAttention(
            {plan_.batch, cache, plan_.qkv, plan_.attn, qkv_dim_, q_dim_, c_.num_heads,
             static_cast<float>(1.0 / std::sqrt(static_cast<double>(c_.head_dim))),
             scores_here ? plan_.score_table : nullptr},
            {plan_.t, plan_.splits, plan_.workspace, plan_.cascade, /*block_kernel=*/false,
             b_.options_.batch_invariant ? kernels::kInvariantSplitKeys : 0},
            stream_),
        "attention");
    return absl::OkStatus();
  }
  absl::Status ProjectOut(int l) {
    return b_.ProjectResidual(plan_, plan_.attn, q_dim_, b_.layers_[l].o);
  }
  absl::Status MlpNorm(int l) {
    ASSIGN_OR_RETURN(in_, b_.NormInput(plan_, b_.layers_[l].mlp_norm, /*add_delta=*/true));
    return absl::OkStatus();
  }
  absl::Status ProjectGateUp(int l) {
    const Layer& layer = b_.layers_[l];
    return b_.Project(plan_, in_, c_.hidden_size, layer.gate_up, 2 * c_.intermediate_size,
                      plan_.gate_up, layer.mlp_norm);
  }
  absl::Status Swiglu() {
    const int64_t ffn = c_.intermediate_size;
    RETURN_IF_CUDA(kernels::LaunchSwiglu({plan_.gate_up, plan_.gate_up + ffn, plan_.act, plan_.t,
                                          ffn, 2 * ffn, 2 * ffn, ffn},
                                         stream_),
                   "swiglu");
    return absl::OkStatus();
  }
  absl::Status ProjectDown(int l) {
    return b_.ProjectResidual(plan_, plan_.act, c_.intermediate_size, b_.layers_[l].down);
  }
  bool tapped() const { return static_cast<bool>(tap_); }
  absl::Status Emit(std::string_view name, LayerTensor tensor) {
    const int64_t hidden = c_.hidden_size, ffn = c_.intermediate_size;
    switch (tensor) {
      case LayerTensor::kNormed: return b_.Emit(plan_, tap_, name, plan_.h, hidden, hidden);
      case LayerTensor::kQ: return b_.Emit(plan_, tap_, name, plan_.qkv, q_dim_, qkv_dim_);
      case LayerTensor::kK:
        return b_.Emit(plan_, tap_, name, plan_.qkv + q_dim_, kv_dim_, qkv_dim_);
      case LayerTensor::kV:
        return b_.Emit(plan_, tap_, name, plan_.qkv + q_dim_ + kv_dim_, kv_dim_, qkv_dim_);
      case LayerTensor::kAttention:
        return b_.Emit(plan_, tap_, name, plan_.attn, q_dim_, q_dim_);
      case LayerTensor::kDelta: return b_.Emit(plan_, tap_, name, plan_.delta, hidden, hidden);
      case LayerTensor::kResidual: return b_.Emit(plan_, tap_, name, plan_.x, hidden, hidden);
      case LayerTensor::kActivation: return b_.Emit(plan_, tap_, name, plan_.act, ffn, ffn);
    }
    return absl::OkStatus();
  }

 private:
  CudaBackend& b_;
  const StepPlan& plan_;
  const TensorTap& tap_;
  const model::ModelConfig& c_;
  const int64_t q_dim_, kv_dim_, qkv_dim_;
  cudaStream_t stream_;
  const float* in_ = nullptr;  // The next projection's input, chosen by the last norm.
};

absl::Status CudaBackend::EnqueueForward(const StepPlan& plan, const TensorTap& tap) {
  const model::ModelConfig& c = config_;
  const int64_t hidden = c.hidden_size;
  cudaStream_t stream = context_->stream();
  RETURN_IF_CUDA(kernels::LaunchEmbedding({plan.tokens, embed_, WeightType::kBF16, plan.x, plan.t,
                                           c.vocab_size, hidden, hidden},
                                          stream),
                 "embedding");
  RETURN_IF_ERROR(Emit(plan, tap, "embed", plan.x, hidden, hidden));
  RETURN_IF_CUDA(kernels::LaunchRopeCosSin(
                     {plan.positions, inv_freq_, plan.cos, plan.sin, plan.t, c.head_dim}, stream),
                 "rope cos/sin");
  LayerOps ops(*this, plan, tap);
  for (int l = 0; l < c.num_layers; ++l) RETURN_IF_ERROR(RunLayer(c, l, ops));
  ASSIGN_OR_RETURN(const float* in, NormInput(plan, final_norm_, /*add_delta=*/true));
  RETURN_IF_ERROR(Emit(plan, tap, "final_norm", plan.h, hidden, hidden));
  if (plan.num_logits == 0) return absl::OkStatus();
  if (plan.fused) {
    return Gemv(plan, in, hidden, lm_head_, c.vocab_size, plan.logits, final_norm_, plan.logit_rows,
                plan.num_logits);
  }
  return context_->Logits({.hidden = in,
                           .rows = plan.logit_rows,
                           .lm_head = lm_head_.data,
                           .lm_head_type = lm_head_.type,
                           .out = plan.logits,
                           .num_rows = plan.num_logits,
                           .dim = hidden,
                           .vocab = c.vocab_size,
                           .hidden_stride = hidden,
                           .out_stride = c.vocab_size,
                           .batch_invariant = options_.batch_invariant});
}

absl::Status CudaBackend::RunForward(const StepPlan& plan, const TensorTap& tap) {
  // Graphs for decode steps (one token per row: the shapes repeat step after step); prefill and
  // the tap's debug copies run eagerly.
  if (!options_.cuda_graphs || tap || !plan.host.decode) return EnqueueForward(plan, tap);
  const kernels::CudaGraphCache::Key key = {plan.t,
                                            plan.batch.num_seqs,
                                            plan.num_logits,
                                            plan.splits,
                                            plan.score_table != nullptr,
                                            plan.fused,
                                            options_.batch_invariant,
                                            plan.cascade.num_groups,
                                            plan.cascade.num_splits,
                                            plan.cascade.max_members,
                                            reinterpret_cast<int64_t>(batch_.get()),
                                            reinterpret_cast<int64_t>(activations_.get()),
                                            reinterpret_cast<int64_t>(plan.logits),
                                            reinterpret_cast<int64_t>(plan.score_table),
                                            reinterpret_cast<int64_t>(plan.workspace),
                                            reinterpret_cast<int64_t>(context_->staging())};
  return graphs_.Run(key, context_->stream(), [&] { return EnqueueForward(plan, tap); });
}

absl::Status CudaBackend::Step(std::span<const ForwardRow> rows, const TensorTap& tap) {
  ASSIGN_OR_RETURN(const StepPlan plan, PrepareStep(rows, static_cast<bool>(tap)));
  RETURN_IF_ERROR(RunForward(plan, tap));
  cudaStream_t stream = context_->stream();
  const int64_t vocab = config_.vocab_size;
  if (!plan.reduced.empty()) {
    RETURN_IF_ERROR(reducer_->Enqueue(
        plan.reduced, {plan.logits, plan.num_logits, plan.score_table, plan.batch.kv_len}));
  }
  if (tap && plan.num_logits > 0) {
    host_logits_.resize(plan.num_logits * vocab);
    RETURN_IF_CUDA(
        cudaMemcpyAsync(host_logits_.data(), plan.logits, host_logits_.size() * sizeof(float),
                        cudaMemcpyDeviceToHost, stream),
        "logits download");
  }
  int64_t next = 0;  // Full rows only for the rows that asked (the debug path).
  for (size_t s = 0; s < rows.size(); ++s) {
    const bool projected = rows[s].logits != nullptr || rows[s].reduction != nullptr;
    const float* device_row = projected ? plan.logits + next++ * vocab : nullptr;
    if (rows[s].logits != nullptr) {
      RETURN_IF_CUDA(cudaMemcpyAsync(rows[s].logits, device_row, vocab * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream),
                     "logits download");
    }
    if (rows[s].last_scores != nullptr) {
      RETURN_IF_CUDA(
          cudaMemcpyAsync(rows[s].last_scores,
                          static_cast<float*>(scores_.get()) + plan.score_offsets[s],
                          config_.num_heads * int64_t{plan.host.kv_len[s]} * sizeof(float),
                          cudaMemcpyDeviceToHost, stream),
          "scores download");
    }
  }
  RETURN_IF_CUDA(cudaStreamSynchronize(stream), "forward step");
  if (tap && plan.num_logits > 0) tap("logits", host_logits_.data(), plan.num_logits, vocab);
  if (!plan.reduced.empty()) reducer_->Finish(plan.reduced);
  return absl::OkStatus();
}

}  // namespace arbor::worker
