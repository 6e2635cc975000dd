#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace arbor::model {
namespace {

using Json = nlohmann::json;

absl::Status TensorError(absl::string_view file, absl::string_view tensor, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", tensor, "': ", why));
}

// A JSON integer in [0, 2^63) as uint64, or nullopt.
std::optional<uint64_t> NonNegative(const Json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  return std::nullopt;
}

// One header entry → a view into `data` (the bytes after the header); [begin, end) is returned
// for the overlap check.
absl::StatusOr<std::pair<TensorView, uint64_t>> ParseEntry(const std::string& name,
                                                           const Json& entry,
                                                           absl::string_view data,
                                                           absl::string_view file) {
  if (!entry.is_object()) return TensorError(file, name, "header entry is not an object");
  auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return TensorError(file, name, "missing string field 'dtype'");
  }
  absl::StatusOr<DType> dtype = ParseDType(dtype_it->get<std::string>());
  if (!dtype.ok()) return TensorError(file, name, dtype.status().message());

  auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return TensorError(file, name, "missing list field 'shape'");
  }
  TensorView view;
  view.name = name;
  view.dtype = *dtype;
  // Count elements with overflow checks: a hostile shape must not wrap to a small size.
  uint64_t elements = 1;
  bool overflow = false, empty = false;
  for (const Json& dim : *shape_it) {
    std::optional<uint64_t> size = NonNegative(dim);
    if (!size || *size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return TensorError(file, name, "shape holds something other than a non-negative integer");
    }
    view.shape.push_back(static_cast<int64_t>(*size));
    empty |= *size == 0;
    if (*size != 0 && elements > std::numeric_limits<uint64_t>::max() / *size) overflow = true;
    if (!overflow) elements *= *size;
  }
  if (empty) {  // A zero dimension makes the tensor empty, however large the others.
    overflow = false;
    elements = 0;
  }
  const uint64_t dtype_size = Layout(*dtype).block_bytes;
  if (overflow || elements > std::numeric_limits<uint64_t>::max() / dtype_size) {
    return TensorError(file, name, "shape is too large");
  }

  auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return TensorError(file, name, "missing field 'data_offsets' = [begin, end]");
  }
  std::optional<uint64_t> begin = NonNegative((*offsets_it)[0]);
  std::optional<uint64_t> end = NonNegative((*offsets_it)[1]);
  if (!begin || !end || *begin > *end) {
    return TensorError(file, name, "data_offsets must be integers with 0 <= begin <= end");
  }
  if (*end > data.size()) {
    return TensorError(
        file, name,
        absl::StrCat("data_offsets [", *begin, ", ", *end,
                     ") out of range: the data section holds ", data.size(), " bytes"));
  }
  const uint64_t nbytes = elements * dtype_size;
  if (*end - *begin != nbytes) {
    return TensorError(file, name,
                       absl::StrCat("data_offsets span ", *end - *begin, " bytes but dtype ",
                                    DTypeName(*dtype), " × shape needs ", nbytes));
  }
  view.data = data.data() + *begin;
  view.nbytes = nbytes;
  return std::make_pair(std::move(view), *begin);
}

}  // namespace

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    if (name == DTypeName(dtype)) return dtype;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("dtype '", name, "' is not supported (F32, F16, BF16)"));
}

absl::StatusOr<std::vector<TensorView>> ParseSafetensors(absl::string_view bytes,
                                                         absl::string_view file) {
  if (bytes.size() < 8) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": truncated: ", bytes.size(),
                                                   " bytes, shorter than the 8-byte "
                                                   "header length"));
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) {
    header_size = (header_size << 8) | static_cast<uint8_t>(bytes[i]);
  }
  if (header_size > kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": header length ", header_size,
                                                   " exceeds the limit of ",
                                                   kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (header_size > bytes.size() - 8) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": truncated: header length ", header_size,
                                                   " exceeds the ", bytes.size() - 8,
                                                   " bytes after it"));
  }
  const absl::string_view header = bytes.substr(8, header_size);
  const absl::string_view data = bytes.substr(8 + header_size);
  Json root = Json::parse(header.begin(), header.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": header is not a JSON object"));
  }

  std::vector<TensorView> tensors;
  std::vector<std::pair<uint64_t, size_t>> begins;  // (begin, index into tensors)
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") continue;  // Free-form string map; nothing to check.
    ASSIGN_OR_RETURN(auto parsed, ParseEntry(it.key(), it.value(), data, file));
    begins.emplace_back(parsed.second, tensors.size());
    tensors.push_back(std::move(parsed.first));
  }
  // Sorted by start, each tensor must end before the next begins (empty tensors overlap none).
  std::sort(begins.begin(), begins.end());
  uint64_t previous_end = 0;
  size_t previous = 0;
  for (size_t i = 0; i < begins.size(); ++i) {
    const TensorView& tensor = tensors[begins[i].second];
    if (tensor.nbytes == 0) continue;
    if (begins[i].first < previous_end) {
      return TensorError(file, tensor.name,
                         absl::StrCat("data overlaps tensor '", tensors[previous].name, "'"));
    }
    previous_end = begins[i].first + tensor.nbytes;
    previous = begins[i].second;
  }
  // nlohmann objects iterate in key order, so `tensors` is already sorted by name.
  return tensors;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  ASSIGN_OR_RETURN(std::vector<TensorView> tensors, ParseSafetensors(file->bytes(), path));
  return std::unique_ptr<SafetensorsFile>(new SafetensorsFile(std::move(file), std::move(tensors)));
}

}  // namespace arbor::model
