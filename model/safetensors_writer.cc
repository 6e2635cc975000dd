#include "model/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/safetensors.h"
#include "nlohmann/json.hpp"

namespace arbor::model {

size_t TensorSpec::nbytes() const {
  size_t elements = 1;
  for (int64_t dim : shape) elements *= static_cast<size_t>(dim);
  return elements * Layout(dtype).block_bytes;
}

absl::StatusOr<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(
    const std::string& path, std::vector<TensorSpec> specs,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorSpec& spec : specs) {
    if (!names.insert(spec.name).second || spec.name == "__metadata__") {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor name '", spec.name, "' is repeated or reserved"));
    }
    for (int64_t dim : spec.shape) {
      if (dim < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": tensor '", spec.name, "' has a negative dimension"));
      }
    }
    const uint64_t end = offset + spec.nbytes();
    header[spec.name] = {
        {"dtype", DTypeName(spec.dtype)}, {"shape", spec.shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // The format pads the header with spaces so the data starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  std::unique_ptr<SafetensorsWriter> writer(new SafetensorsWriter(path, out, offset));
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(text.size() >> (8 * i));
  if (std::fwrite(length, 1, 8, out) != 8 ||
      std::fwrite(text.data(), 1, text.size(), out) != text.size()) {
    return absl::DataLossError(absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  }
  return writer;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (out_ != nullptr) std::fclose(out_);
}

absl::Status SafetensorsWriter::Append(const void* bytes, size_t size) {
  if (out_ == nullptr) return absl::FailedPreconditionError(path_ + ": already finished");
  if (size > total_ - written_) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": ", size, " bytes appended but only ", total_ - written_,
                     " remain in the declared tensors"));
  }
  if (std::fwrite(bytes, 1, size, out_) != size) {
    return absl::DataLossError(absl::StrCat(path_, ": write failed: ", std::strerror(errno)));
  }
  written_ += size;
  return absl::OkStatus();
}

absl::Status SafetensorsWriter::Finish() {
  if (out_ == nullptr) return absl::FailedPreconditionError(path_ + ": already finished");
  if (written_ != total_) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": only ", written_, " of ", total_, " tensor bytes written"));
  }
  const bool failed = std::fclose(out_) != 0;
  out_ = nullptr;
  if (failed) return absl::DataLossError(absl::StrCat(path_, ": close failed"));
  return absl::OkStatus();
}

}  // namespace arbor::model
