// Everything the CUDA ops of one device need beyond their params: the device, the stream every
// launch goes to, the cuBLASLt handle, its workspace, and the bf16 staging buffer the GEMMs read
// activations from. One context per backend instance; nothing here is global, so two contexts
// (two devices, or two backends on one) never share state.
//
// The GEMMs live here because they are library calls on this handle and workspace: out = x·wᵀ
// with bf16 (or fp32) weights, fp32 accumulation and fp32 output. Few rows (decode) go to the
// GEMV kernel instead (gemv_cuda.h), which streams bf16 weights at memory bandwidth and reads the
// fp32 activations as they are. Algorithm choices are looked up once per shape and cached, so a
// steady decode loop makes no heuristic queries and the calls can be captured in a CUDA graph (as
// long as no staging growth happens inside the capture). A product asking for batch invariance
// (MatmulParams::batch_invariant, as on the CPU) goes, whatever its row count, through the
// batch-invariant GEMM (invariant_gemm_cuda.h) instead of either; so do GGUF block types.
#ifndef ARBOR_KERNELS_CUDA_CUDA_CONTEXT_H_
#define ARBOR_KERNELS_CUDA_CUDA_CONTEXT_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/gemv_cuda.h"
#include "kernels/invariant_gemm_cuda.h"
#include "kernels/logits.h"
#include "kernels/matmul.h"

namespace arbor::kernels {

class CudaContext {
 public:
  // Selects `device`, creates a non-blocking stream, the cuBLASLt handle and its workspace.
  static absl::StatusOr<std::unique_ptr<CudaContext>> Create(int device);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  // Makes this context's device the calling thread's current one. CUDA's current device is per
  // thread: every entry point that may run on a thread other than the creating one (the
  // worker's engine thread) binds first, or allocations and launches go to device 0.
  absl::Status Bind() const;
  // Whether the device can still run work: waits for the stream, then OK unless the context
  // holds a sticky error (IsStickyCudaError), which it returns. Other errors are cleared.
  absl::Status Usable() const;
  cudaStream_t stream() const { return stream_; }
  int multiprocessor_count() const { return multiprocessor_count_; }

  // Grows the bf16 activation staging to at least `elements` (synchronising the stream first
  // when it must reallocate). Call before capturing a graph with the largest shape it will see.
  absl::Status ReserveStaging(int64_t elements);

  // MatmulRef's contract on device pointers. GGUF block types, and bf16 weights when
  // batch_invariant: the batch-invariant GEMM at every row count (activations narrowed to bf16
  // as it loads them). Other bf16 products: up to gemv_max_rows() rows through the GEMV kernel
  // (fp32 activations), more narrowed to bf16 first (into the staging buffer) for cuBLASLt. fp32
  // weights (which no backend uploads): an fp32 cuBLASLt GEMM, even when batch_invariant asks
  // otherwise.
  absl::Status Matmul(const MatmulParams& params);
  // LogitsRef's contract on device pointers, the chosen rows read in place by the
  // batch-invariant GEMM as Matmul chooses it, else gathered (and narrowed) in one pass for one
  // cuBLASLt GEMM; either streams the lm_head once.
  absl::Status Logits(const LogitsParams& params);

  // Rows up to which bf16 products take the GEMV kernel: kGemvDefaultRows unless set (at most
  // kGemvMaxRows); 0 to send
  // every product to cuBLASLt (benchmarks and tests that compare the two paths).
  int64_t gemv_max_rows() const { return gemv_max_rows_; }
  void set_gemv_max_rows(int64_t rows) { gemv_max_rows_ = rows; }
  // The staging buffer's current address: a captured graph that narrows through it is valid only
  // while it stays there (ReserveStaging may move it).
  const void* staging() const { return staging_; }

 private:
  struct Plan;
  using PlanKey = std::array<int64_t, 8>;

  explicit CudaContext(int device);
  // The batch-invariant GEMM, its params checked first (an error names what it cannot take).
  absl::Status InvariantGemm(const InvariantGemmParams& params);
  // out[m, n] = x[m, k] · w[n, k]ᵀ with x of element type `type` (bf16 or fp32, as w), cuBLASLt.
  absl::Status Gemm(const void* x, int64_t x_stride, const void* w, WeightType type, float* out,
                    int64_t out_stride, int64_t m, int64_t n, int64_t k);
  absl::StatusOr<const Plan*> FindPlan(const PlanKey& key);

  int device_ = 0;
  int multiprocessor_count_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  uint16_t* staging_ = nullptr;
  int64_t staging_elements_ = 0;
  int64_t gemv_max_rows_ = kGemvDefaultRows;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
};

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_CUDA_CUDA_CONTEXT_H_
