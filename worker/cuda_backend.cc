#include "worker/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/bf16.h"
#include "base/status_macros.h"
#include "kernels/cuda_status.h"
#include "kernels/embedding_cuda.h"
#include "kernels/paged_attention_cuda.h"
#include "kernels/paged_kv_append_cuda.h"
#include "kernels/rms_norm_cuda.h"
#include "kernels/rope_cuda.h"
#include "kernels/swiglu_cuda.h"
#include "worker/forward_rows.h"
#include "worker/weights.h"

namespace arbor::worker {
namespace {

using kernels::CudaStatus;
using kernels::WeightType;

#define RETURN_IF_CUDA(expr, what) RETURN_IF_ERROR(CudaStatus((expr), (what)))

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

absl::StatusOr<void*> CudaBackend::Allocate(size_t bytes) {
  void* p = nullptr;
  RETURN_IF_CUDA(cudaMalloc(&p, std::max<size_t>(bytes, 1)),
                 absl::StrCat("device allocation of ", bytes, " bytes"));
  allocations_.push_back(p);
  return p;
}

absl::Status CudaBackend::Upload(void* device, const void* host, size_t bytes,
                                 const std::string& what) {
  // On the step stream, and waited for: a plain cudaMemcpy from pageable memory goes on the
  // legacy stream and may still be in flight when the first step starts on the non-blocking
  // one; the wait also keeps `host` alive until the copy is done.
  RETURN_IF_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, context_->stream()),
                 what);
  RETURN_IF_CUDA(cudaStreamSynchronize(context_->stream()), what);
  return absl::OkStatus();
}

absl::StatusOr<uint16_t*> CudaBackend::UploadMatrix(const TensorLookup& lookup,
                                                    const std::vector<std::string>& names,
                                                    const std::vector<int64_t>& rows,
                                                    int64_t cols) {
  int64_t total_rows = 0;
  for (int64_t r : rows) total_rows += r;
  std::vector<uint16_t> host(total_rows * cols);
  int64_t offset = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    ASSIGN_OR_RETURN(const model::TensorView t, lookup(names[i]));
    RETURN_IF_ERROR(CheckTensor(t, names[i], {rows[i], cols}));
    const int64_t n = rows[i] * cols;
    if (t.dtype == model::DType::kBF16) {
      std::memcpy(host.data() + offset, t.data, n * sizeof(uint16_t));
    } else {
      // Any other type (f32, f16, GGUF blocks) widens exactly to f32, then rounds to bf16.
      std::vector<float> row(cols);
      for (int64_t r = 0; r < rows[i]; ++r) {
        WidenRows(t, r, 1, row.data());
        for (int64_t j = 0; j < cols; ++j) host[offset + r * cols + j] = base::FloatToBf16(row[j]);
      }
    }
    offset += n;
  }
  ASSIGN_OR_RETURN(void* device, Allocate(host.size() * sizeof(uint16_t)));
  RETURN_IF_ERROR(Upload(device, host.data(), host.size() * sizeof(uint16_t),
                         absl::StrCat("upload of ", names[0])));
  weight_bytes_ += static_cast<int64_t>(host.size() * sizeof(uint16_t));
  return static_cast<uint16_t*>(device);
}

absl::StatusOr<float*> CudaBackend::UploadVector(const TensorLookup& lookup,
                                                 const std::string& name, int64_t size) {
  ASSIGN_OR_RETURN(const model::TensorView t, lookup(name));
  RETURN_IF_ERROR(CheckTensor(t, name, {size}));
  const std::vector<float> host = WidenToFloat(t);
  ASSIGN_OR_RETURN(void* device, Allocate(size * sizeof(float)));
  RETURN_IF_ERROR(
      Upload(device, host.data(), size * sizeof(float), absl::StrCat("upload of ", name)));
  return static_cast<float*>(device);
}

absl::Status CudaBackend::Load(const TensorLookup& lookup) {
  const model::ModelConfig& c = config_;
  const int64_t hidden = c.hidden_size, ffn = c.intermediate_size;
  const int64_t q_dim = int64_t{c.num_heads} * c.head_dim;
  const int64_t kv_dim = int64_t{c.num_kv_heads} * c.head_dim;
  ASSIGN_OR_RETURN(embed_,
                   UploadMatrix(lookup, {"model.embed_tokens.weight"}, {c.vocab_size}, hidden));
  if (c.tie_word_embeddings) {
    lm_head_ = embed_;
  } else {
    // A decode step reads one embedding row, not the table: only the lm_head counts.
    weight_bytes_ -= int64_t{c.vocab_size} * hidden * 2;
    ASSIGN_OR_RETURN(lm_head_, UploadMatrix(lookup, {"lm_head.weight"}, {c.vocab_size}, hidden));
  }
  ASSIGN_OR_RETURN(final_norm_, UploadVector(lookup, "model.norm.weight", hidden));
  layers_.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    Layer& layer = layers_[l];
    ASSIGN_OR_RETURN(layer.attn_norm, UploadVector(lookup, p + "input_layernorm.weight", hidden));
    ASSIGN_OR_RETURN(layer.mlp_norm,
                     UploadVector(lookup, p + "post_attention_layernorm.weight", hidden));
    ASSIGN_OR_RETURN(layer.qkv,
                     UploadMatrix(lookup,
                                  {p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                                   p + "self_attn.v_proj.weight"},
                                  {q_dim, kv_dim, kv_dim}, hidden));
    ASSIGN_OR_RETURN(layer.o,
                     UploadMatrix(lookup, {p + "self_attn.o_proj.weight"}, {hidden}, q_dim));
    ASSIGN_OR_RETURN(layer.gate_up,
                     UploadMatrix(lookup, {p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"},
                                  {ffn, ffn}, hidden));
    ASSIGN_OR_RETURN(layer.down, UploadMatrix(lookup, {p + "mlp.down_proj.weight"}, {hidden}, ffn));
  }
  const std::vector<float> inv_freq =
      kernels::RopeInvFreq(c.rope_theta, c.head_dim, RopeScalingParamsOf(c.rope_scaling));
  ASSIGN_OR_RETURN(void* freq, Allocate(inv_freq.size() * sizeof(float)));
  inv_freq_ = static_cast<float*>(freq);
  RETURN_IF_ERROR(Upload(inv_freq_, inv_freq.data(), inv_freq.size() * sizeof(float),
                         "upload of RoPE frequencies"));
  const size_t pool_bytes = size_t{static_cast<size_t>(options_.kv_blocks)} * options_.block_size *
                            kv_dim * KvDtypeBytes(options_.kv_dtype);
  for (int l = 0; l < c.num_layers; ++l) {
    ASSIGN_OR_RETURN(void* k, Allocate(pool_bytes));
    ASSIGN_OR_RETURN(void* v, Allocate(pool_bytes));
    k_cache_.push_back(k);
    v_cache_.push_back(v);
  }
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

absl::Status CudaBackend::Step(std::span<const ForwardRow> rows, const TensorTap& tap) {
  const model::ModelConfig& c = config_;
  const int64_t hidden = c.hidden_size, ffn = c.intermediate_size, hd = c.head_dim;
  const int64_t q_dim = c.num_heads * hd, kv_dim = c.num_kv_heads * hd;
  const int64_t qkv_dim = q_dim + 2 * kv_dim, vocab = c.vocab_size;
  cudaStream_t stream = context_->stream();

  // The step's batch in the paged (CSR) form of kernels/paged_kv.h, packed for one upload.
  std::vector<int32_t> q_start = {0}, kv_len, block_start = {0}, block_ids, tokens, positions,
                       logit_rows;
  std::vector<int64_t> score_offsets;  // Per row: offset into the scores buffer, or −1.
  int64_t score_floats = 0, max_kv_len = 0;
  std::vector<CudaRowReducer::Row> reduced;
  for (const ForwardRow& row : rows) {
    const int32_t n = static_cast<int32_t>(row.tokens.size());
    q_start.push_back(q_start.back() + n);
    kv_len.push_back(row.start_pos + n);
    max_kv_len = std::max<int64_t>(max_kv_len, kv_len.back());
    const int64_t blocks = (int64_t{kv_len.back()} + options_.block_size - 1) / options_.block_size;
    block_ids.insert(block_ids.end(), row.block_table.begin(), row.block_table.begin() + blocks);
    block_start.push_back(static_cast<int32_t>(block_ids.size()));
    tokens.insert(tokens.end(), row.tokens.begin(), row.tokens.end());
    for (int32_t i = 0; i < n; ++i) positions.push_back(row.start_pos + i);
    const bool wants_scores = row.last_scores != nullptr || row.reduction != nullptr;
    if (row.reduction != nullptr) {
      reduced.push_back({row.reduction, static_cast<int32_t>(logit_rows.size()),
                         static_cast<int32_t>(kv_len.size() - 1), kv_len.back()});
    }
    if (row.logits != nullptr || row.reduction != nullptr) logit_rows.push_back(q_start.back() - 1);
    score_offsets.push_back(wants_scores ? score_floats : -1);
    if (wants_scores) score_floats += c.num_heads * int64_t{kv_len.back()};
  }
  const int64_t num_seqs = static_cast<int64_t>(rows.size());
  const int64_t t = static_cast<int64_t>(tokens.size());
  const int64_t num_logits = static_cast<int64_t>(logit_rows.size());
  std::vector<int32_t> packed;
  auto pack = [&packed](const std::vector<int32_t>& v) {
    const size_t offset = packed.size();
    packed.insert(packed.end(), v.begin(), v.end());
    return offset;
  };
  const size_t o_q_start = pack(q_start), o_kv_len = pack(kv_len),
               o_block_start = pack(block_start), o_block_ids = pack(block_ids),
               o_tokens = pack(tokens), o_positions = pack(positions),
               o_logit_rows = pack(logit_rows);
  ASSIGN_OR_RETURN(void* batch_mem, batch_.Grow(packed.size() * sizeof(int32_t), stream, "batch"));
  int32_t* ints = static_cast<int32_t*>(batch_mem);
  RETURN_IF_CUDA(cudaMemcpyAsync(ints, packed.data(), packed.size() * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, stream),
                 "batch upload");
  const kernels::PagedBatch batch{num_seqs, ints + o_q_start, ints + o_kv_len, ints + o_block_start,
                                  ints + o_block_ids};

  // Activations, each 256-byte aligned for cuBLASLt.
  size_t bytes = 0;
  auto carve = [&bytes](int64_t floats) {
    const size_t offset = bytes;
    bytes += (static_cast<size_t>(floats) * sizeof(float) + 255) / 256 * 256;
    return offset;
  };
  const size_t o_x = carve(t * hidden), o_h = carve(t * hidden), o_qkv = carve(t * qkv_dim),
               o_attn = carve(t * q_dim), o_delta = carve(t * hidden),
               o_gate_up = carve(t * 2 * ffn), o_act = carve(t * ffn), o_cos = carve(t * hd / 2),
               o_sin = carve(t * hd / 2);
  ASSIGN_OR_RETURN(void* act_mem, activations_.Grow(bytes, stream, "activations"));
  char* base = static_cast<char*>(act_mem);
  float *x = reinterpret_cast<float*>(base + o_x), *h = reinterpret_cast<float*>(base + o_h),
        *qkv = reinterpret_cast<float*>(base + o_qkv),
        *attn = reinterpret_cast<float*>(base + o_attn),
        *delta = reinterpret_cast<float*>(base + o_delta),
        *gate_up = reinterpret_cast<float*>(base + o_gate_up),
        *act = reinterpret_cast<float*>(base + o_act),
        *cos = reinterpret_cast<float*>(base + o_cos),
        *sin = reinterpret_cast<float*>(base + o_sin);

  // Last-layer score rows on the device, and the per-sequence pointer table the kernel reads.
  float* const* score_table = nullptr;
  if (score_floats > 0) {
    ASSIGN_OR_RETURN(void* scores, scores_.Grow(score_floats * sizeof(float), stream, "scores"));
    std::vector<float*> table(num_seqs, nullptr);
    for (int64_t s = 0; s < num_seqs; ++s) {
      if (score_offsets[s] >= 0) table[s] = static_cast<float*>(scores) + score_offsets[s];
    }
    ASSIGN_OR_RETURN(void* table_mem,
                     score_table_.Grow(num_seqs * sizeof(float*), stream, "score table"));
    RETURN_IF_CUDA(cudaMemcpyAsync(table_mem, table.data(), num_seqs * sizeof(float*),
                                   cudaMemcpyHostToDevice, stream),
                   "score table upload");
    score_table = static_cast<float* const*>(table_mem);
  }
  const int64_t splits = kernels::PagedAttentionSplits(t, c.num_kv_heads, max_kv_len,
                                                       context_->multiprocessor_count());
  const int64_t workspace_floats =
      kernels::PagedAttentionWorkspaceFloats(t, c.num_heads, hd, splits);
  ASSIGN_OR_RETURN(void* workspace, attention_workspace_.Grow(workspace_floats * sizeof(float),
                                                              stream, "attention workspace"));
  RETURN_IF_ERROR(context_->ReserveStaging(t * std::max(hidden, std::max(q_dim, ffn))));

  // Tap: copies a [t, cols] tensor (row stride `stride`) to the host, synchronously.
  auto emit = [&](std::string_view name, const float* data, int64_t cols,
                  int64_t stride) -> absl::Status {
    if (!tap) return absl::OkStatus();
    std::vector<float> host(t * cols);
    RETURN_IF_CUDA(
        cudaMemcpy2DAsync(host.data(), cols * sizeof(float), data, stride * sizeof(float),
                          cols * sizeof(float), t, cudaMemcpyDeviceToHost, stream),
        "tap copy");
    RETURN_IF_CUDA(cudaStreamSynchronize(stream), "tap copy");
    tap(name, host.data(), t, cols);
    return absl::OkStatus();
  };
  auto norm = [&](const float* weight, bool add_delta) {
    return CudaStatus(
        kernels::LaunchRmsNorm({add_delta ? delta : x, add_delta ? x : nullptr, weight, h, t,
                                hidden, hidden, hidden, hidden, c.rms_norm_eps},
                               stream),
        "rms_norm");
  };
  auto matmul = [&](const float* in, int64_t in_dim, const uint16_t* w, int64_t out_dim,
                    float* out) {
    return context_->Matmul({in, w, WeightType::kBF16, out, t, out_dim, in_dim, in_dim, out_dim});
  };

  RETURN_IF_CUDA(
      kernels::LaunchEmbedding(
          {ints + o_tokens, embed_, WeightType::kBF16, x, t, vocab, hidden, hidden}, stream),
      "embedding");
  RETURN_IF_ERROR(emit("embed", x, hidden, hidden));
  RETURN_IF_CUDA(
      kernels::LaunchRopeCosSin({ints + o_positions, inv_freq_, cos, sin, t, hd}, stream),
      "rope cos/sin");
  float* q = qkv;
  float* k = qkv + q_dim;
  float* v = qkv + q_dim + kv_dim;
  for (int l = 0; l < c.num_layers; ++l) {
    const Layer& layer = layers_[l];
    const std::string prefix = absl::StrCat("layer", l, ".");
    RETURN_IF_ERROR(norm(layer.attn_norm, /*add_delta=*/l > 0));
    RETURN_IF_ERROR(emit(prefix + "attn_norm", h, hidden, hidden));
    RETURN_IF_ERROR(matmul(h, hidden, layer.qkv, qkv_dim, qkv));
    RETURN_IF_CUDA(kernels::LaunchRope({q, cos, sin, t, c.num_heads, hd, qkv_dim}, stream),
                   "rope q");
    RETURN_IF_CUDA(kernels::LaunchRope({k, cos, sin, t, c.num_kv_heads, hd, qkv_dim}, stream),
                   "rope k");
    RETURN_IF_ERROR(emit(prefix + "q", q, q_dim, qkv_dim));
    RETURN_IF_ERROR(emit(prefix + "k", k, kv_dim, qkv_dim));
    RETURN_IF_ERROR(emit(prefix + "v", v, kv_dim, qkv_dim));
    const kernels::PagedKvLayer cache = KvLayer(l);
    // Every row's K/V is written before any row attends (as on the CPU): rows of one step may
    // read blocks another row fills.
    RETURN_IF_CUDA(kernels::LaunchPagedKvAppend({batch, cache, k, v, qkv_dim, qkv_dim}, t, stream),
                   "kv append");
    const bool scores_here = score_table != nullptr && l == c.num_layers - 1;
    RETURN_IF_CUDA(
        kernels::LaunchPagedAttention({batch, cache, q, attn, qkv_dim, q_dim, c.num_heads,
                                       static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd))),
                                       scores_here ? score_table : nullptr},
                                      {t, splits, static_cast<float*>(workspace)}, stream),
        "attention");
    RETURN_IF_ERROR(emit(prefix + "attn", attn, q_dim, q_dim));
    RETURN_IF_ERROR(matmul(attn, q_dim, layer.o, hidden, delta));
    RETURN_IF_ERROR(emit(prefix + "attn_out", delta, hidden, hidden));
    RETURN_IF_ERROR(norm(layer.mlp_norm, /*add_delta=*/true));
    RETURN_IF_ERROR(emit(prefix + "attn_residual", x, hidden, hidden));
    RETURN_IF_ERROR(emit(prefix + "mlp_norm", h, hidden, hidden));
    RETURN_IF_ERROR(matmul(h, hidden, layer.gate_up, 2 * ffn, gate_up));
    RETURN_IF_CUDA(
        kernels::LaunchSwiglu({gate_up, gate_up + ffn, act, t, ffn, 2 * ffn, 2 * ffn, ffn}, stream),
        "swiglu");
    RETURN_IF_ERROR(emit(prefix + "mlp_act", act, ffn, ffn));
    RETURN_IF_ERROR(matmul(act, ffn, layer.down, hidden, delta));
    RETURN_IF_ERROR(emit(prefix + "mlp_out", delta, hidden, hidden));
  }
  RETURN_IF_ERROR(norm(final_norm_, /*add_delta=*/true));
  RETURN_IF_ERROR(emit("final_norm", h, hidden, hidden));

  if (num_logits > 0) {
    ASSIGN_OR_RETURN(void* logits_mem,
                     logits_.Grow(num_logits * vocab * sizeof(float), stream, "logits"));
    float* logits = static_cast<float*>(logits_mem);
    RETURN_IF_ERROR(context_->Logits({h, ints + o_logit_rows, lm_head_, WeightType::kBF16, logits,
                                      num_logits, hidden, vocab, hidden, vocab}));
    if (!reduced.empty()) {
      RETURN_IF_ERROR(
          reducer_->Enqueue(reduced, {logits, num_logits, score_table, ints + o_kv_len}));
    }
    if (tap) {
      host_logits_.resize(num_logits * vocab);
      RETURN_IF_CUDA(
          cudaMemcpyAsync(host_logits_.data(), logits, host_logits_.size() * sizeof(float),
                          cudaMemcpyDeviceToHost, stream),
          "logits download");
    }
    int64_t next = 0;  // Full rows only for the rows that asked (the debug path).
    for (const ForwardRow& row : rows) {
      if (row.logits == nullptr && row.reduction == nullptr) continue;
      const float* device_row = logits + next++ * vocab;
      if (row.logits == nullptr) continue;
      RETURN_IF_CUDA(cudaMemcpyAsync(row.logits, device_row, vocab * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream),
                     "logits download");
    }
  }
  for (int64_t s = 0; s < num_seqs; ++s) {
    if (rows[s].last_scores == nullptr) continue;
    RETURN_IF_CUDA(
        cudaMemcpyAsync(rows[s].last_scores, static_cast<float*>(scores_.get()) + score_offsets[s],
                        c.num_heads * int64_t{kv_len[s]} * sizeof(float), cudaMemcpyDeviceToHost,
                        stream),
        "scores download");
  }
  RETURN_IF_CUDA(cudaStreamSynchronize(stream), "forward step");
  if (tap && num_logits > 0) tap("logits", host_logits_.data(), num_logits, vocab);
  if (!reduced.empty()) reducer_->Finish(reduced);
  return absl::OkStatus();
}

}  // namespace arbor::worker
