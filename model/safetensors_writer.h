// Writing a safetensors file tensor by tensor, for `arbor make-model` and tests. The header is
// computed up front from the tensor specs, then the data streams to disk in as many pieces as
// the caller likes, so a multi-gigabyte checkpoint never sits in memory.
#ifndef ARBOR_MODEL_SAFETENSORS_WRITER_H_
#define ARBOR_MODEL_SAFETENSORS_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tensor.h"

namespace arbor::model {

// The name, dtype and shape of a tensor to write.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;

  size_t nbytes() const;
};

class SafetensorsWriter {
 public:
  // Creates `path` and writes the header for `specs`, laid out in the given order (names must
  // be unique). `metadata` becomes the header's __metadata__ string map.
  static absl::StatusOr<std::unique_ptr<SafetensorsWriter>> Create(
      const std::string& path, std::vector<TensorSpec> specs,
      const std::map<std::string, std::string>& metadata = {});

  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;
  ~SafetensorsWriter();

  // Appends raw little-endian bytes of the current tensor (then the next one once it is full).
  // Pieces may be any size; FAILED_PRECONDITION when more bytes arrive than the specs hold.
  absl::Status Append(const void* bytes, size_t size);
  // Flushes and closes; FAILED_PRECONDITION when tensors are still missing bytes.
  absl::Status Finish();

  // Bytes of tensor data written so far and in all.
  uint64_t written_bytes() const { return written_; }
  uint64_t total_bytes() const { return total_; }

 private:
  SafetensorsWriter(std::string path, std::FILE* out, uint64_t total)
      : path_(std::move(path)), out_(out), total_(total) {}

  std::string path_;
  std::FILE* out_;
  uint64_t total_;
  uint64_t written_ = 0;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_SAFETENSORS_WRITER_H_
