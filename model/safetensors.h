// Reading the safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-
// endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}},
// then the tensor bytes, offsets relative to the end of the header. Every header field is
// checked before a view is handed out, because checkpoints come from users: a malformed file is
// an INVALID_ARGUMENT naming the file and tensor, never a read outside the file.
#ifndef ARBOR_MODEL_SAFETENSORS_H_
#define ARBOR_MODEL_SAFETENSORS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/mapped_file.h"
#include "model/tensor.h"

namespace arbor::model {

// Headers larger than this are refused before any JSON is parsed (real ones are < 1 MiB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// The dtype safetensors spells `name` ("F32", "F16" or "BF16", as DTypeName writes them);
// INVALID_ARGUMENT for any other dtype (I8, F64, F8_E4M3, ...).
absl::StatusOr<DType> ParseDType(absl::string_view name);

// Validates the whole safetensors file `bytes` (named `file` in errors) and returns a view of
// each tensor, sorted by name, pointing into `bytes`. Checks: header length ≤
// kMaxSafetensorsHeaderBytes and inside the file, a JSON object, known dtypes, shapes of
// non-negative integers, nbytes = product(shape) × dtype size = end − begin, offsets inside the
// data section, no two tensors overlapping.
absl::StatusOr<std::vector<TensorView>> ParseSafetensors(absl::string_view bytes,
                                                         absl::string_view file);

// One memory-mapped, validated safetensors file.
class SafetensorsFile {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  size_t size_bytes() const { return file_->bytes().size(); }
  // Sorted by name; data points into the mapping, valid while this object lives.
  const std::vector<TensorView>& tensors() const { return tensors_; }

 private:
  SafetensorsFile(std::unique_ptr<MappedFile> file, std::vector<TensorView> tensors)
      : file_(std::move(file)), tensors_(std::move(tensors)) {}

  std::unique_ptr<MappedFile> file_;
  std::vector<TensorView> tensors_;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_SAFETENSORS_H_
