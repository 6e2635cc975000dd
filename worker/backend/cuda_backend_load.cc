// CudaBackend's load: the checkpoint's tensors uploaded to the device as the forward reads them
// (matrices in bf16 or their GGUF blocks, q/k/v and gate/up fused, norms and biases in fp32), RoPE
// frequencies, and the KV pools. Part of class CudaBackend (cuda_backend.h).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/bf16.h"
#include "base/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/invariant_gemm_cuda.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/rope_cuda.h"
#include "model/architecture.h"
#include "model/llama_tensors.h"
#include "worker/backend/cuda_backend.h"
#include "worker/backend/forward_rows.h"
#include "worker/backend/weights.h"

namespace arbor::worker {

using kernels::CudaStatus;

absl::StatusOr<void*> CudaBackend::Allocate(size_t bytes) {
  void* p = nullptr;
  RETURN_IF_ERROR(CudaStatus(cudaMalloc(&p, std::max<size_t>(bytes, 1)),
                             absl::StrCat("device allocation of ", bytes, " bytes")));
  allocations_.push_back(p);
  return p;
}

absl::Status CudaBackend::Upload(void* device, const void* host, size_t bytes,
                                 const std::string& what) {
  // On the step stream, and waited for: a plain cudaMemcpy from pageable memory goes on the
  // legacy stream and may still be in flight when the first step starts on the non-blocking
  // one; the wait also keeps `host` alive until the copy is done.
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, context_->stream()), what));
  RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(context_->stream()), what));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<CudaBackend::Matrix>> CudaBackend::UploadBlocks(
    const std::vector<model::TensorView>& tensors, const std::string& what) {
  const std::optional<kernels::WeightType> type = kernels::KernelWeightType(tensors[0].dtype);
  if (!type || !kernels::IsQuantized(*type) || !kernels::InvariantGemmTakes(*type)) {
    return std::nullopt;
  }
  size_t bytes = 0;
  for (const model::TensorView& t : tensors) {
    if (t.dtype != tensors[0].dtype) return std::nullopt;
    bytes += t.nbytes;
  }
  ASSIGN_OR_RETURN(void* device, Allocate(bytes));
  size_t offset = 0;
  for (const model::TensorView& t : tensors) {
    RETURN_IF_ERROR(Upload(static_cast<char*>(device) + offset, t.data, t.nbytes, what));
    offset += t.nbytes;
  }
  weight_bytes_ += static_cast<int64_t>(bytes);
  return Matrix{device, *type};
}

absl::StatusOr<CudaBackend::Matrix> CudaBackend::UploadMatrix(const TensorLookup& lookup,
                                                              const std::vector<std::string>& names,
                                                              const std::vector<int64_t>& rows,
                                                              int64_t cols, bool keep_blocks) {
  std::vector<model::TensorView> tensors;
  for (size_t i = 0; i < names.size(); ++i) {
    ASSIGN_OR_RETURN(tensors.emplace_back(), lookup(names[i]));
    RETURN_IF_ERROR(CheckTensor(tensors.back(), names[i], {rows[i], cols}));
  }
  const std::string what = absl::StrCat("upload of ", names[0]);
  if (keep_blocks) {
    ASSIGN_OR_RETURN(const std::optional<Matrix> blocks, UploadBlocks(tensors, what));
    if (blocks) return *blocks;
  }
  int64_t total_rows = 0;
  for (int64_t r : rows) total_rows += r;
  std::vector<uint16_t> host(total_rows * cols);
  int64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const model::TensorView& t = tensors[i];
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
  RETURN_IF_ERROR(Upload(device, host.data(), host.size() * sizeof(uint16_t), what));
  weight_bytes_ += static_cast<int64_t>(host.size() * sizeof(uint16_t));
  return Matrix{device, kernels::WeightType::kBF16};
}

absl::StatusOr<float*> CudaBackend::UploadVector(const TensorLookup& lookup,
                                                 const std::vector<std::string>& names,
                                                 const std::vector<int64_t>& sizes) {
  std::vector<float> host;
  for (size_t i = 0; i < names.size(); ++i) {
    ASSIGN_OR_RETURN(const model::TensorView t, lookup(names[i]));
    RETURN_IF_ERROR(CheckTensor(t, names[i], {sizes[i]}));
    const std::vector<float> values = WidenToFloat(t);
    host.insert(host.end(), values.begin(), values.end());
  }
  ASSIGN_OR_RETURN(void* device, Allocate(host.size() * sizeof(float)));
  RETURN_IF_ERROR(Upload(device, host.data(), host.size() * sizeof(float),
                         absl::StrCat("upload of ", names[0])));
  return static_cast<float*>(device);
}

absl::Status CudaBackend::Load(const TensorLookup& lookup) {
  const model::ModelConfig& c = config_;
  const int64_t hidden = c.hidden_size, ffn = c.intermediate_size;
  const int64_t q_dim = int64_t{c.num_heads} * c.head_dim;
  const int64_t kv_dim = int64_t{c.num_kv_heads} * c.head_dim;
  const bool keep = options_.keep_blocks;
  // The embedding kernel reads bf16 rows: the table is bf16, and so is a head tied to it unless
  // the table's blocks are kept for the head as well (fewer bytes streamed per step than bf16).
  ASSIGN_OR_RETURN(lm_head_, UploadMatrix(lookup, {model::kEmbedTokensName}, {c.vocab_size}, hidden,
                                          /*keep_blocks=*/false));
  embed_ = static_cast<const uint16_t*>(lm_head_.data);
  std::optional<Matrix> head;
  if (!c.tie_word_embeddings) {
    ASSIGN_OR_RETURN(head,
                     UploadMatrix(lookup, {model::kLmHeadName}, {c.vocab_size}, hidden, keep));
  } else if (keep) {
    ASSIGN_OR_RETURN(const model::TensorView table, lookup(model::kEmbedTokensName));
    ASSIGN_OR_RETURN(head, UploadBlocks({table}, "upload of the tied head's blocks"));
  }
  if (head) {
    // A decode step reads one embedding row, not the table: only the head counts.
    weight_bytes_ -= int64_t{c.vocab_size} * hidden * 2;
    lm_head_ = *head;
  }
  ASSIGN_OR_RETURN(final_norm_, UploadVector(lookup, {model::kFinalNormName}, {hidden}));
  layers_.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const model::LlamaLayerNames n = model::LlamaLayerTensorNames(l);
    Layer& layer = layers_[l];
    ASSIGN_OR_RETURN(layer.attn_norm, UploadVector(lookup, {n.attn_norm}, {hidden}));
    ASSIGN_OR_RETURN(layer.mlp_norm, UploadVector(lookup, {n.mlp_norm}, {hidden}));
    ASSIGN_OR_RETURN(layer.qkv,
                     UploadMatrix(lookup, {n.q, n.k, n.v}, {q_dim, kv_dim, kv_dim}, hidden, keep));
    if (c.qkv_bias()) {  // In fp32, as the CPU backend adds them.
      ASSIGN_OR_RETURN(layer.qkv_bias, UploadVector(lookup, {n.q_bias, n.k_bias, n.v_bias},
                                                    {q_dim, kv_dim, kv_dim}));
    }
    if (model::Describe(c.architecture).qk_norm) {
      ASSIGN_OR_RETURN(layer.qk_norm,
                       UploadVector(lookup, {n.q_norm, n.k_norm}, {c.head_dim, c.head_dim}));
    }
    ASSIGN_OR_RETURN(layer.o, UploadMatrix(lookup, {n.o}, {hidden}, q_dim, keep));
    ASSIGN_OR_RETURN(layer.gate_up, UploadMatrix(lookup, {n.gate, n.up}, {ffn, ffn}, hidden, keep));
    ASSIGN_OR_RETURN(layer.down, UploadMatrix(lookup, {n.down}, {hidden}, ffn, keep));
    for (const Matrix* m : {&layer.qkv, &layer.o, &layer.gate_up, &layer.down}) {
      all_bf16_ = all_bf16_ && m->type == kernels::WeightType::kBF16;
    }
  }
  all_bf16_ = all_bf16_ && lm_head_.type == kernels::WeightType::kBF16;

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

}  // namespace arbor::worker
