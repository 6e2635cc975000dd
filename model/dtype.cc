#include "model/dtype.h"

namespace arbor::model {

DTypeLayout Layout(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {1, 4};
    case DType::kF16:
    case DType::kBF16:
      return {1, 2};
    case DType::kQ8_0:
      return {32, 2 + 32};
    case DType::kQ4_0:
      return {32, 2 + 16};
    case DType::kQ4_1:
      return {32, 2 + 2 + 16};
  }
  return {1, 1};
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kQ8_0:
      return "Q8_0";
    case DType::kQ4_0:
      return "Q4_0";
    case DType::kQ4_1:
      return "Q4_1";
  }
  return "?";
}

int64_t RowBytes(DType dtype, int64_t cols) {
  const DTypeLayout layout = Layout(dtype);
  if (cols < 0 || cols % layout.block_elements != 0) return -1;
  return cols / layout.block_elements * layout.block_bytes;
}

}  // namespace arbor::model
