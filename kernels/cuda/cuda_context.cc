#include "kernels/cuda/cuda_context.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/invariant_gemm_cuda.h"
#include "kernels/matmul_cuda.h"

namespace arbor::kernels {
namespace {

// Whether a product takes the batch-invariant GEMM: block types always (it is their only GPU
// path), bf16 weights when invariance is asked for.
bool TakesInvariantGemm(WeightType type, bool batch_invariant) {
  return IsQuantized(type) || (type == WeightType::kBF16 && batch_invariant);
}

// cuBLAS(Lt) reports its own status type; this is the one place it becomes absl::Status.
absl::Status CublasStatus(cublasStatus_t status, absl::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string message = absl::StrCat(what, ": ", cublasLtGetStatusName(status), " (",
                                           cublasLtGetStatusString(status), ")");
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

#define ARBOR_RETURN_IF_CUDA(expr, what)                                 \
  do {                                                                   \
    if (absl::Status s_ = CudaStatus((expr), what); !s_.ok()) return s_; \
  } while (0)
#define ARBOR_RETURN_IF_CUBLAS(expr, what)                                 \
  do {                                                                     \
    if (absl::Status s_ = CublasStatus((expr), what); !s_.ok()) return s_; \
  } while (0)

// Largest power of two ≤ 256 dividing every value: the alignment cuBLASLt may assume.
int64_t Alignment(std::initializer_list<int64_t> values) {
  int64_t a = 256;
  for (int64_t v : values) {
    while (a > 1 && v % a != 0) a /= 2;
  }
  return a;
}

// 32 MiB: what cuBLASLt's Hopper kernels ask for at most (NVIDIA's recommendation for sm_90).
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

}  // namespace

// One GEMM shape's descriptors and chosen algorithm.
struct CudaContext::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

CudaContext::CudaContext(int device) : device_(device) {}

absl::StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(int device) {
  std::unique_ptr<CudaContext> ctx(new CudaContext(device));
  ARBOR_RETURN_IF_CUDA(cudaSetDevice(device), absl::StrCat("cudaSetDevice(", device, ")"));
  ARBOR_RETURN_IF_CUDA(
      cudaDeviceGetAttribute(&ctx->multiprocessor_count_, cudaDevAttrMultiProcessorCount, device),
      "multiprocessor count");
  ARBOR_RETURN_IF_CUDA(cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking), "stream");
  ARBOR_RETURN_IF_CUBLAS(cublasLtCreate(&ctx->lt_), "cublasLtCreate");
  ARBOR_RETURN_IF_CUDA(cudaMalloc(&ctx->workspace_, kWorkspaceBytes), "cuBLASLt workspace");
  ctx->workspace_bytes_ = kWorkspaceBytes;
  return ctx;
}

absl::Status CudaContext::Bind() const {
  return CudaStatus(cudaSetDevice(device_), absl::StrCat("cudaSetDevice(", device_, ")"));
}

absl::Status CudaContext::Usable() const {
  if (absl::Status bound = Bind(); !bound.ok()) return bound;
  cudaError_t error = cudaStreamSynchronize(stream_);
  if (error == cudaSuccess) error = cudaPeekAtLastError();
  if (!IsStickyCudaError(error)) {
    cudaGetLastError();  // A non-sticky error belonged to the failed call only.
    return absl::OkStatus();
  }
  return CudaStatus(
      error, absl::StrCat("device cuda:", device_, " (a sticky error: every later call fails)"));
}

CudaContext::~CudaContext() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  plans_.clear();
  cudaFree(staging_);
  cudaFree(workspace_);
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::Status CudaContext::ReserveStaging(int64_t elements) {
  if (elements <= staging_elements_) return absl::OkStatus();
  ARBOR_RETURN_IF_CUDA(cudaStreamSynchronize(stream_), "staging growth");
  cudaFree(staging_);
  staging_ = nullptr;
  staging_elements_ = 0;
  ARBOR_RETURN_IF_CUDA(cudaMalloc(reinterpret_cast<void**>(&staging_), elements * sizeof(uint16_t)),
                       absl::StrCat("bf16 staging of ", elements, " elements"));
  staging_elements_ = elements;
  return absl::OkStatus();
}

absl::StatusOr<const CudaContext::Plan*> CudaContext::FindPlan(const PlanKey& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();
  const auto [m, n, k, x_stride, out_stride, type_id, align_x, align_rest] = key;
  const cudaDataType type =
      type_id == static_cast<int64_t>(WeightType::kBF16) ? CUDA_R_16BF : CUDA_R_32F;
  auto plan = std::make_unique<Plan>();
  // Column-major view: outᵀ[n, m] = op(A)·B with A = w viewed as [k, n] (transposed) and
  // B = xᵀ viewed as [k, m].
  ARBOR_RETURN_IF_CUBLAS(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                         "matmul desc");
  const cublasOperation_t trans_a = CUBLAS_OP_T;
  ARBOR_RETURN_IF_CUBLAS(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                        &trans_a, sizeof(trans_a)),
                         "transa");
  ARBOR_RETURN_IF_CUBLAS(cublasLtMatrixLayoutCreate(&plan->a, type, k, n, k), "layout a");
  ARBOR_RETURN_IF_CUBLAS(cublasLtMatrixLayoutCreate(&plan->b, type, k, m, x_stride), "layout b");
  ARBOR_RETURN_IF_CUBLAS(cublasLtMatrixLayoutCreate(&plan->c, CUDA_R_32F, n, m, out_stride),
                         "layout c");
  cublasLtMatmulPreference_t pref = nullptr;
  ARBOR_RETURN_IF_CUBLAS(cublasLtMatmulPreferenceCreate(&pref), "preference");
  const uint32_t ax = static_cast<uint32_t>(align_x), ar = static_cast<uint32_t>(align_rest);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace_bytes_, sizeof(workspace_bytes_));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &ar,
                                       sizeof(ar));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ax,
                                       sizeof(ax));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ar,
                                       sizeof(ar));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ar,
                                       sizeof(ar));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      lt_, plan->desc, plan->a, plan->b, plan->c, plan->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  ARBOR_RETURN_IF_CUBLAS(status, "matmul heuristic");
  if (found == 0) {
    return absl::InternalError(
        absl::StrCat("cuBLASLt has no algorithm for m=", m, " n=", n, " k=", k));
  }
  plan->algo = result.algo;
  return plans_.emplace(key, std::move(plan)).first->second.get();
}

absl::Status CudaContext::Gemm(const void* x, int64_t x_stride, const void* w, WeightType type,
                               float* out, int64_t out_stride, int64_t m, int64_t n, int64_t k) {
  const int64_t elem = type == WeightType::kBF16 ? 2 : 4;
  const PlanKey key = {m,
                       n,
                       k,
                       x_stride,
                       out_stride,
                       static_cast<int64_t>(type),
                       Alignment({reinterpret_cast<int64_t>(x), x_stride * elem}),
                       Alignment({reinterpret_cast<int64_t>(w), reinterpret_cast<int64_t>(out),
                                  k * elem, out_stride * 4})};
  auto plan = FindPlan(key);
  if (!plan.ok()) return plan.status();
  const float alpha = 1.0f, beta = 0.0f;
  const Plan& p = **plan;
  return CublasStatus(cublasLtMatmul(lt_, p.desc, &alpha, w, p.a, x, p.b, &beta, out, p.c, out, p.c,
                                     &p.algo, workspace_, workspace_bytes_, stream_),
                      "cublasLtMatmul");
}

absl::Status CudaContext::InvariantGemm(const InvariantGemmParams& params) {
  if (!InvariantGemmServes(params)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA GEMM: weights of type ", static_cast<int>(params.w_type), " with k = ", params.k,
        " (a multiple of 8, or of the block) or operand alignment not served"));
  }
  return CudaStatus(LaunchInvariantGemm(params, stream_), "batch-invariant gemm");
}

absl::Status CudaContext::Matmul(const MatmulParams& p) {
  if (p.m == 0 || p.n == 0) return absl::OkStatus();
  if (TakesInvariantGemm(p.w_type, p.batch_invariant)) {
    return InvariantGemm(
        {p.x, nullptr, p.w, p.out, p.m, p.n, p.k, p.x_stride, p.out_stride, p.w_type});
  }
  if (p.w_type == WeightType::kBF16 && p.m <= gemv_max_rows_) {
    const GemvParams gemv{p.x,   nullptr,    static_cast<const uint16_t*>(p.w),
                          p.out, p.m,        p.n,
                          p.k,   p.x_stride, p.out_stride};
    if (GemvServes(gemv)) return CudaStatus(LaunchGemvBf16(gemv, stream_), "gemv");
  }
  if (p.w_type == WeightType::kF32) {
    return Gemm(p.x, p.x_stride, p.w, p.w_type, p.out, p.out_stride, p.m, p.n, p.k);
  }
  if (absl::Status s = ReserveStaging(p.m * p.k); !s.ok()) return s;
  ARBOR_RETURN_IF_CUDA(LaunchGatherBf16({p.x, nullptr, staging_, p.m, p.k, p.x_stride}, stream_),
                       "narrow x");
  return Gemm(staging_, p.k, p.w, WeightType::kBF16, p.out, p.out_stride, p.m, p.n, p.k);
}

absl::Status CudaContext::Logits(const LogitsParams& p) {
  if (p.num_rows == 0) return absl::OkStatus();
  if (TakesInvariantGemm(p.lm_head_type, p.batch_invariant)) {
    return InvariantGemm({p.hidden, p.rows, p.lm_head, p.out, p.num_rows, p.vocab, p.dim,
                          p.hidden_stride, p.out_stride, p.lm_head_type});
  }
  if (p.lm_head_type == WeightType::kBF16 && p.num_rows <= gemv_max_rows_) {
    const GemvParams gemv{p.hidden, p.rows,          static_cast<const uint16_t*>(p.lm_head),
                          p.out,    p.num_rows,      p.vocab,
                          p.dim,    p.hidden_stride, p.out_stride};
    if (GemvServes(gemv)) return CudaStatus(LaunchGemvBf16(gemv, stream_), "gemv logits");
  }
  if (p.lm_head_type != WeightType::kBF16) {
    return absl::UnimplementedError("CUDA logits: fp32 lm_head weights are not uploaded");
  }
  if (absl::Status s = ReserveStaging(p.num_rows * p.dim); !s.ok()) return s;
  ARBOR_RETURN_IF_CUDA(
      LaunchGatherBf16({p.hidden, p.rows, staging_, p.num_rows, p.dim, p.hidden_stride}, stream_),
      "gather logits rows");
  return Gemm(staging_, p.dim, p.lm_head, WeightType::kBF16, p.out, p.out_stride, p.num_rows,
              p.vocab, p.dim);
}

}  // namespace arbor::kernels
