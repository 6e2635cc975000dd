// A read-only memory mapping of a whole file: checkpoint tensors are views into it, so weights
// are paged in by the kernel on first touch and never copied by the loader.
#ifndef ARBOR_MODEL_MAPPED_FILE_H_
#define ARBOR_MODEL_MAPPED_FILE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arbor::model {

class MappedFile {
 public:
  // Maps `path` read-only. NOT_FOUND when it does not exist; an empty file maps to no bytes.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  // The file's bytes, valid while this object lives.
  absl::string_view bytes() const {
    return absl::string_view(static_cast<const char*>(data_), size_);
  }

 private:
  MappedFile(std::string path, void* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  void* data_;
  size_t size_;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_MAPPED_FILE_H_
