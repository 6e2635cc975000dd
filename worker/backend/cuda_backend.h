// The CUDA backend: the Llama forward of cpu_backend.h on one GPU, behind the same Backend
// interface and TensorTap names, so the two are compared tensor by tensor. Weights are uploaded
// once as bf16 (q/k/v and gate/up fused into one matrix each, so a layer runs four GEMMs), the
// paged KV pools (bf16 by default, fp32 on request) live on the device, GEMMs read bf16
// activations and accumulate in fp32 — the batch-invariant GEMM by default, cuBLASLt and the GEMV
// with batch_invariant off — and every other op is a kernels/*.cu kernel taking its CPU twin's
// params.
//
// A step uploads its batch description once, launches everything on the context's stream — the
// row reductions too (cuda_row_reducer.h), whose records come back in one pinned copy — and
// synchronises once at the end. A decode step's launches are replayed as one CUDA graph once
// its shape repeats; without batch invariance, projections of up to kGemvMaxRows rows run as
// GEMVs (gemv_cuda.h). Full logits and score rows travel only for callers that ask for them (the
// debug path) and for reductions wanting more candidates than the device top-K keeps, which are
// reduced on the host. Every entry point binds the backend's device to the calling thread first,
// so any thread may drive it.
#ifndef ARBOR_WORKER_BACKEND_CUDA_BACKEND_H_
#define ARBOR_WORKER_BACKEND_CUDA_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/cuda_buffer.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/cuda_graph_cache.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "worker/backend/backend.h"
#include "worker/backend/cpu_backend.h"
#include "worker/backend/cuda_row_reducer.h"
#include "worker/kv/kv_dtype.h"

namespace arbor::worker {

struct CudaBackendOptions {
  int device = 0;            // CUDA device ordinal.
  int32_t kv_blocks = 1024;  // KV capacity in blocks (per layer pool).
  int32_t block_size = 16;   // Tokens per KV block.
  KvDtype kv_dtype = KvDtype::kBF16;
  // Decode steps replayed as CUDA graphs (kernels/cuda/cuda_graph_cache.h); off: every launch
  // eager.
  bool cuda_graphs = true;
  // Decode rows sharing KV blocks read the shared prefix once per group
  // (worker/backend/cascade_plan.h).
  bool cascade = true;
  // Fewest rows a group needs to cascade; 0: enough to fill a prefix CTA's (query, head) pairs
  // (kernels::CascadeMaxMembers). On an H200 a group of 32 siblings × 4 heads ran its attention
  // 1.5× faster with cascade and a group of 16 1.5× slower (docs/PERFORMANCE.md).
  int32_t cascade_min_members = 0;
  // --numerics=invariant: every projection through kernels/invariant_gemm_cuda.h at every row
  // count, attention split every kInvariantSplitKeys keys, no cascade — a row's logits, scores
  // and metrics are the same bits whatever shares its step. false: the fastest kernels for each
  // step's shape (GEMVs, cuBLASLt, splits and cascade sized to the batch).
  bool batch_invariant = true;
  // GGUF block-quantized matrices (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) stay in their
  // blocks on the device, widened in registers by the batch-invariant GEMM (a fused group — q/k/v,
  // gate/up — keeps them when its matrices share one type); false: every matrix widened to bf16 at
  // load (--weights_dtype=bf16).
  bool keep_blocks = true;
};

class CudaBackend : public Backend {
 public:
  // Checks every tensor's presence, dtype (f32, bf16, f16; all stored as bf16 on the device)
  // and shape against `config`, naming the tensor on error, then uploads.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(const model::ModelConfig& config,
                                                             const TensorLookup& lookup,
                                                             const CudaBackendOptions& options);
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      std::shared_ptr<const model::Checkpoint> checkpoint, const CudaBackendOptions& options);
  ~CudaBackend() override;

  const model::ModelConfig& config() const override { return config_; }
  std::string name() const override { return "cuda"; }
  int32_t kv_num_blocks() const override { return options_.kv_blocks; }
  int32_t kv_block_size() const override { return options_.block_size; }
  absl::Status CopyKvBlocks(std::span<const BlockCopy> copies) override;
  absl::Status Forward(std::span<const ForwardRow> rows, const TensorTap& tap = {}) override;
  // Graphs captured and replayed so far (the benchmark reports them).
  const kernels::CudaGraphCache& graphs() const { return graphs_; }
  // Turns graph replay on or off from the next step (benchmarks compare both).
  void set_cuda_graphs(bool on) { options_.cuda_graphs = on; }
  // Turns cascade attention on or off from the next step (benchmarks compare both); batch-
  // invariant backends never cascade.
  void set_cascade(bool on) { options_.cascade = on; }
  // Switches batch-invariant numerics (CudaBackendOptions::batch_invariant) from the next step
  // (benchmarks compare both); refused where the model's widths do not suit the invariant GEMM.
  absl::Status set_batch_invariant(bool on);
  // The context's verdict (CudaContext::Usable): a sticky CUDA error makes the backend unusable.
  absl::Status Usable() override { return context_->Usable(); }

  // Bytes of weights one decode step streams (every matrix once, as stored).
  int64_t weight_bytes() const { return weight_bytes_; }
  kernels::CudaContext& context() { return *context_; }

 private:
  // A weight matrix on the device: bf16 bit patterns, or rows of a GGUF block type's blocks.
  struct Matrix {
    const void* data = nullptr;
    kernels::WeightType type = kernels::WeightType::kBF16;
  };
  struct Layer {
    float* attn_norm = nullptr;
    float* mlp_norm = nullptr;
    Matrix qkv;                 // [q_dim + 2·kv_dim, hidden]
    float* qkv_bias = nullptr;  // [q_dim + 2·kv_dim] when the config's qkv_bias() (Qwen2).
    float* qk_norm = nullptr;   // [2·head_dim]: q's then k's per-head norm weights (Qwen3).
    Matrix o;                   // [hidden, q_dim]
    Matrix gate_up;             // [2·ffn, hidden]
    Matrix down;                // [hidden, ffn]
  };
  CudaBackend(const model::ModelConfig& config, const CudaBackendOptions& options)
      : config_(config), options_(options) {}
  absl::Status Load(const TensorLookup& lookup);
  // Layer `layer`'s pools as the paged-KV kernels take them.
  kernels::PagedKvLayer KvLayer(int layer) const;
  // Copies `bytes` from the host to the device, finished when this returns.
  absl::Status Upload(void* device, const void* host, size_t bytes, const std::string& what);
  // Uploads the named matrices stacked by rows (each [rows_i, cols]) as one matrix: their blocks
  // as they are when keep_blocks and they share a block type the GEMM reads, else bf16.
  absl::StatusOr<Matrix> UploadMatrix(const TensorLookup& lookup,
                                      const std::vector<std::string>& names,
                                      const std::vector<int64_t>& rows, int64_t cols,
                                      bool keep_blocks);
  // The named tensors' bytes as they are, stacked, when they share one block type the GEMM
  // reads; nullopt otherwise (bf16 then).
  absl::StatusOr<std::optional<Matrix>> UploadBlocks(const std::vector<model::TensorView>& tensors,
                                                     const std::string& what);
  // Uploads the named vectors (each [sizes_i]) one after another as one fp32 vector.
  absl::StatusOr<float*> UploadVector(const TensorLookup& lookup,
                                      const std::vector<std::string>& names,
                                      const std::vector<int64_t>& sizes);
  absl::StatusOr<void*> Allocate(size_t bytes);
  struct StepPlan;
  // The forward of `rows` whose reductions the device serves (Forward reduces the others):
  // PrepareStep lays the step out on the device, RunForward launches it (replaying a graph for
  // a repeated decode shape), then reductions and downloads, and one synchronisation.
  absl::Status Step(std::span<const ForwardRow> rows, const TensorTap& tap);
  absl::StatusOr<StepPlan> PrepareStep(std::span<const ForwardRow> rows, bool tapped);
  absl::Status UploadBatch(StepPlan& plan);
  absl::Status CarveActivations(StepPlan& plan);
  absl::Status PlaceScores(std::span<const ForwardRow> rows, StepPlan& plan);
  absl::Status RunForward(const StepPlan& plan, const TensorTap& tap);
  // Launches only (no synchronisation, no allocation) unless `tap` is set: capturable.
  absl::Status EnqueueForward(const StepPlan& plan, const TensorTap& tap);
  class LayerOps;  // A layer's steps (layer_recipe.h) as launches.
  // The input of a projection that follows an RMSNorm with `weight`: unfused, the norm runs now
  // into h (adding the last sublayer's delta into x first when `add_delta`); fused, x itself
  // (the GEMV normalises it).
  absl::StatusOr<const float*> NormInput(const StepPlan& plan, const float* weight, bool add_delta);
  // in → out through w; fused, a GEMV normalising `in` with `norm_weight`.
  absl::Status Project(const StepPlan& plan, const float* in, int64_t in_dim, const Matrix& w,
                       int64_t out_dim, float* out, const float* norm_weight);
  // A sublayer's output: unfused into delta (the next norm adds it); fused, added into x.
  absl::Status ProjectResidual(const StepPlan& plan, const float* in, int64_t in_dim,
                               const Matrix& w);
  // One GEMV of m rows of bf16 w (gathered by `rows` when set); accumulates when `out` is the
  // residual x.
  absl::Status Gemv(const StepPlan& plan, const float* in, int64_t in_dim, const Matrix& w,
                    int64_t out_dim, float* out, const float* norm_weight, const int32_t* rows,
                    int64_t m);
  // Copies a [t, cols] tensor (row stride `stride`) to the tap, synchronously; no-op without one.
  absl::Status Emit(const StepPlan& plan, const TensorTap& tap, std::string_view name,
                    const float* data, int64_t cols, int64_t stride);

  model::ModelConfig config_;
  CudaBackendOptions options_;
  std::unique_ptr<kernels::CudaContext> context_;
  std::vector<void*> allocations_;   // Weights and KV pools, freed with the backend.
  const uint16_t* embed_ = nullptr;  // bf16: the embedding kernel reads rows of it.
  Matrix lm_head_;
  bool all_bf16_ = true;  // Every matrix bf16: what the fused GEMV steps need.
  float* final_norm_ = nullptr;
  float* inv_freq_ = nullptr;
  std::vector<Layer> layers_;
  std::vector<void*> k_cache_, v_cache_;  // Per layer, options_.kv_dtype elements.
  int64_t weight_bytes_ = 0;
  // Per-step storage: the packed batch description, activations, logits, scores, workspace.
  kernels::CudaBuffer batch_, activations_, logits_, scores_, score_table_, attention_workspace_;
  std::vector<float> host_logits_;
  std::unique_ptr<CudaRowReducer> reducer_;
  kernels::CudaGraphCache graphs_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_CUDA_BACKEND_H_
