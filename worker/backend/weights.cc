#include "worker/backend/weights.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/quant/quant_blocks.h"

namespace arbor::worker {

absl::Status CheckTensor(const model::TensorView& t, const std::string& name,
                         const std::vector<int64_t>& shape) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  const int64_t row_bytes = shape.empty() ? -1 : model::RowBytes(t.dtype, shape.back());
  if (t.shape != shape || t.data == nullptr || row_bytes < 0 ||
      t.nbytes != static_cast<size_t>(rows * row_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor ", name, ": shape [", absl::StrJoin(t.shape, ", "), "], expected [",
        absl::StrJoin(shape, ", "), "] (", model::DTypeName(t.dtype), ", ", t.nbytes, " bytes)"));
  }
  return absl::OkStatus();
}

void WidenRows(const model::TensorView& t, int64_t row_begin, int64_t rows, float* out) {
  const int64_t cols = t.shape.back();
  const int64_t row_bytes = model::RowBytes(t.dtype, cols);
  const char* src = static_cast<const char*>(t.data) + row_begin * row_bytes;
  for (int64_t r = 0; r < rows; ++r) {
    kernels::DequantizeRow(t.dtype, src + r * row_bytes, cols, out + r * cols);
  }
}

std::vector<float> WidenToFloat(const model::TensorView& t) {
  const int64_t cols = t.shape.empty() ? 0 : t.shape.back();
  const int64_t rows =
      cols == 0 ? 0 : static_cast<int64_t>(t.nbytes) / model::RowBytes(t.dtype, cols);
  std::vector<float> out(rows * cols);
  WidenRows(t, 0, rows, out.data());
  return out;
}

absl::StatusOr<WeightsDtype> ParseWeightsDtype(absl::string_view name) {
  if (name == "native") return WeightsDtype::kNative;
  if (name == "f32") return WeightsDtype::kF32;
  if (name == "bf16") return WeightsDtype::kBF16;
  if (name == "q8_0") return WeightsDtype::kQ8_0;
  return absl::InvalidArgumentError(
      absl::StrCat("--weights_dtype=", name,
                   ": expected native (the checkpoint's own types), f32, bf16 or q8_0"));
}

absl::StatusOr<bool> ParseNumerics(absl::string_view name) {
  if (name == "invariant") return true;
  if (name == "fast") return false;
  return absl::InvalidArgumentError(absl::StrCat(
      "--numerics=", name,
      ": expected invariant (a row's results independent of its batch: a seed replays the "
      "same tree) or fast (the fastest kernel for each batch size)"));
}

absl::StatusOr<kernels::ActivationQuant> ParseActivationQuant(absl::string_view name) {
  if (name == "q8") return kernels::ActivationQuant::kQ8;
  if (name == "f32") return kernels::ActivationQuant::kF32;
  return absl::InvalidArgumentError(absl::StrCat(
      "--activation_quant=", name, ": expected q8 (8-bit activations) or f32 (exact)"));
}

}  // namespace arbor::worker
