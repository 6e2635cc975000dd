// The CPU backend: the complete Llama forward over a batch of prefill chunks and decode rows,
// with fp32, bf16 or GGUF block-quantized weights (bf16 and the GGUF blocks stay so in memory,
// memory-mapped; bf16 widens inside the matmul, blocks meet 8-bit activations in integer dot
// products or, in the exact mode, widen to fp32; fp32 accumulation), paged fp32 or bf16 KV,
// multi-threaded over a kernels::ThreadPool. Row reductions run on the same threads once the
// logits are out (ReduceRowOnHost, one row per task). It is a real backend (tests, small models,
// machines without a GPU) and the reference the CUDA backend is compared with, tensor by tensor,
// through the TensorTap names of backend.h.
#ifndef ARBOR_WORKER_BACKEND_CPU_BACKEND_H_
#define ARBOR_WORKER_BACKEND_CPU_BACKEND_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/huge_page_arena.h"
#include "base/zero_pages.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/paged_kv.h"
#include "kernels/quant/repacked_rows.h"
#include "kernels/weight_type.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/tensor.h"
#include "worker/backend/backend.h"
#include "worker/backend/weights.h"
#include "worker/kv/kv_dtype.h"

namespace arbor::worker {

struct CpuBackendOptions {
  int32_t kv_blocks = 1024;                            // KV capacity in blocks (per layer pool).
  int32_t block_size = 16;                             // Tokens per KV block.
  int threads = 0;                                     // 0: one per hardware thread.
  WeightsDtype weights_dtype = WeightsDtype::kNative;  // What the matrices are computed in.
  // How quantized matrices meet the activations (kernels/quant/quant_matmul.h): 8-bit activations
  // and integer dot products by default, as llama.cpp; kF32 is the exact mode.
  kernels::ActivationQuant activation_quant = kernels::ActivationQuant::kQ8;
  // A row's logits independent of what shares its step (other sequences, prefill chunking,
  // prefix-cache hits): one kernel and summation order at every row count
  // (kernels::MatmulParams::batch_invariant), so a seed replays the same tree (--numerics).
  bool batch_invariant = true;
  KvDtype kv_dtype = KvDtype::kF32;
};

// Resolves a Hugging Face tensor name ("model.layers.0.mlp.up_proj.weight") to a view that
// stays valid while the backend lives.
using TensorLookup = std::function<absl::StatusOr<model::TensorView>(const std::string& name)>;

class CpuBackend : public Backend {
 public:
  // Checks every tensor's presence, dtype and shape against `config`, naming the tensor on
  // error, and converts what options.weights_dtype asks for (f16 always widens to f32).
  // lm_head.weight is read unless the config ties it to the embedding.
  static absl::StatusOr<std::unique_ptr<CpuBackend>> Create(const model::ModelConfig& config,
                                                            const TensorLookup& lookup,
                                                            const CpuBackendOptions& options);
  // Over an opened checkpoint, which the backend keeps alive.
  static absl::StatusOr<std::unique_ptr<CpuBackend>> Create(
      std::shared_ptr<const model::Checkpoint> checkpoint, const CpuBackendOptions& options);

  const model::ModelConfig& config() const override { return config_; }
  std::string name() const override { return "cpu"; }
  int32_t kv_num_blocks() const override { return options_.kv_blocks; }
  int32_t kv_block_size() const override { return options_.block_size; }
  absl::Status CopyKvBlocks(std::span<const BlockCopy> copies) override;
  // Bytes of the KV pools (every layer, K and V).
  int64_t kv_bytes() const;
  absl::Status Forward(std::span<const ForwardRow> rows, const TensorTap& tap = {}) override;
  // On the forward's thread pool.
  void HostParallelFor(int64_t n, const std::function<void(int64_t)>& fn) override;

  // Bytes of weights one decode step streams (every matrix once), for bandwidth figures.
  int64_t weight_bytes() const { return weight_bytes_; }
  // Bytes of weights converted at load and held by the backend (the rest stay memory-mapped).
  int64_t converted_bytes() const { return converted_bytes_; }
  // The matrices' types, e.g. "Q4_1 ×210, Q8_0 ×1" — for the start-up report.
  std::string weight_types() const;

 private:
  struct Matrix {
    const void* data = nullptr;
    kernels::WeightType type = kernels::WeightType::kF32;
  };
  struct Layer {
    std::vector<float> attn_norm, mlp_norm;
    Matrix q, k, v, o, gate, up, down;
    std::vector<float> q_bias, k_bias, v_bias;  // Empty unless the config's qkv_bias() (Qwen2).
    std::vector<float> q_norm, k_norm;  // [head_dim]; empty unless the architecture's qk_norm.
  };

  CpuBackend(const model::ModelConfig& config, const CpuBackendOptions& options);
  absl::Status Load(const TensorLookup& lookup);
  absl::StatusOr<Matrix> LoadMatrix(const TensorLookup& lookup, const std::string& name,
                                    int64_t rows, int64_t cols);
  // A layer's projection: LoadMatrix, then Q4_0, Q4_1, Q8_0, Q4_K and Q6_K rows repacked in groups
  // (kernels/quant/repacked_rows.h) where the 8-bit kernels run (Repacked).
  absl::StatusOr<Matrix> LoadProjection(const TensorLookup& lookup, const std::string& name,
                                        int64_t rows, int64_t cols);
  // `matrix` repacked where LoadProjection would repack it, else itself.
  absl::StatusOr<Matrix> Repacked(const Matrix& matrix, int64_t rows, int64_t cols);
  absl::StatusOr<std::vector<float>> LoadVector(const TensorLookup& lookup, const std::string& name,
                                                int64_t size);
  // Layer `layer`'s pools as the paged-KV ops take them (fp32 or bf16 per options_.kv_dtype).
  kernels::PagedKvLayer KvLayer(int layer);
  // Forward's pieces: the step laid out, a layer's steps (layer_recipe.h), RMSNorm (adding delta
  // into x first when `add_delta`), a projection of the step's rows (plus `bias` when not
  // empty), and the logits with each row's reduction.
  struct Step;
  class LayerOps;
  Step PrepareStep(std::span<const ForwardRow> rows, const TensorTap& tap) const;
  void Norm(Step& step, const std::vector<float>& weight, bool add_delta);
  // One projection of the step's `in` rows: out = in · wᵀ (+ bias).
  struct Projection {
    const Matrix& w;
    int64_t out_dim;
    std::vector<float>& out;
    const std::vector<float>& bias;  // Empty: none.
  };
  // Projections of the same input (Q, K and V; gate and up) as one grouped matmul
  // (kernels::MatmulGroupRef), each result as its own matmul would give it.
  void Project(const Step& step, const std::vector<float>& in, int64_t in_dim,
               std::initializer_list<Projection> projections);
  void ProjectAndReduce(std::span<const ForwardRow> rows, const Step& step);

  model::ModelConfig config_;
  CpuBackendOptions options_;
  std::shared_ptr<const model::Checkpoint> checkpoint_;  // Owner of the views, when from one.
  std::vector<std::vector<char>> converted_;             // Matrices converted at load.
  // Projections repacked at load (repacked_rows.h), in huge pages.
  base::HugePageArena weight_arena_;
  int repacked_matrices_ = 0;
  Matrix embed_, lm_head_;
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;
  std::vector<float> inv_freq_;
  int64_t weight_bytes_ = 0;
  int64_t converted_bytes_ = 0;
  std::map<std::string, int> type_counts_;  // Matrix type name → how many.

  // Per layer [blocks, block_size, kv, hd] of options_.kv_dtype elements.
  std::vector<base::ZeroPages> k_cache_, v_cache_;
  std::unique_ptr<kernels::ThreadPool> pool_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_CPU_BACKEND_H_
