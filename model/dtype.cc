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
    case DType::kQ5_0:
      return {32, 2 + 4 + 16};
    case DType::kQ5_1:
      return {32, 2 + 2 + 4 + 16};
    case DType::kQ4_K:
      return {256, 2 + 2 + 12 + 128};
    case DType::kQ5_K:
      return {256, 2 + 2 + 12 + 32 + 128};
    case DType::kQ6_K:
      return {256, 128 + 64 + 16 + 2};
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
    case DType::kQ5_0:
      return "Q5_0";
    case DType::kQ5_1:
      return "Q5_1";
    case DType::kQ4_K:
      return "Q4_K";
    case DType::kQ5_K:
      return "Q5_K";
    case DType::kQ6_K:
      return "Q6_K";
  }
  return "?";
}

int64_t RowBytes(DType dtype, int64_t cols) {
  const DTypeLayout layout = Layout(dtype);
  if (cols < 0 || cols % layout.block_elements != 0) return -1;
  return cols / layout.block_elements * layout.block_bytes;
}

std::vector<int> HalfFieldOffsets(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {};
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
      return {0, 2};
    case DType::kQ6_K:
      return {128 + 64 + 16};
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ5_0:
      break;
  }
  return {0};
}

}  // namespace arbor::model
