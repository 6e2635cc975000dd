#include "model/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace arbor::model {
namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr char kAlignmentKey[] = "general.alignment";

// Reads little-endian values from the header, failing (never reading past the end) with the
// offset and what was being read.
class Cursor {
 public:
  Cursor(absl::string_view bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  uint64_t offset() const { return offset_; }

  // Adds `count` to the array elements seen so far, failing past kGgufMaxArrayElements.
  absl::Status CountArrayElements(uint64_t count, absl::string_view key) {
    array_elements_ += std::min(count, kGgufMaxArrayElements + 1);
    if (array_elements_ > kGgufMaxArrayElements) {
      return Error(absl::StrCat("arrays hold more than ", kGgufMaxArrayElements,
                                " elements in all (at '", key, "')"));
    }
    return absl::OkStatus();
  }
  uint64_t remaining() const { return bytes_.size() - offset_; }

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": GGUF ", what, " (at byte ", offset_, " of ", bytes_.size(), ")"));
  }

  template <typename T>
  absl::StatusOr<T> Read(absl::string_view what) {
    if (remaining() < sizeof(T)) return Error(absl::StrCat("ends inside ", what));
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }

  absl::StatusOr<std::string> ReadString(absl::string_view what) {
    ASSIGN_OR_RETURN(const uint64_t length, Read<uint64_t>(what));
    if (length > remaining() || length > kGgufMaxStringBytes) {
      return Error(
          absl::StrCat(what, " claims ", length, " bytes; ", remaining(), " remain in the file"));
    }
    std::string text(bytes_.data() + offset_, length);
    offset_ += length;
    return text;
  }

  // Fails unless `count` items of at least `min_bytes` each can still fit: checked before any
  // vector of `count` elements is allocated.
  absl::Status CheckCount(uint64_t count, uint64_t min_bytes, absl::string_view what) const {
    if (count > remaining() / std::max<uint64_t>(min_bytes, 1)) {
      return Error(absl::StrCat(what, " claims ", count, " entries of at least ", min_bytes,
                                " bytes; only ", remaining(), " bytes remain"));
    }
    return absl::OkStatus();
  }

 private:
  absl::string_view bytes_;
  const std::string& file_;
  uint64_t offset_ = 0;
  uint64_t array_elements_ = 0;
};

// The smallest encoding of a value of `type`: bounds array counts before allocation.
uint64_t MinValueBytes(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kString:
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kArray:
      return 4 + 8;
  }
  return 1;
}

bool KnownType(uint32_t type) { return type <= static_cast<uint32_t>(GgufType::kFloat64); }

absl::StatusOr<GgufValue> ReadValue(Cursor& cursor, GgufType type, const std::string& key,
                                    int depth);

template <typename T>
absl::Status ReadInteger(Cursor& cursor, const std::string& key, GgufValue& value) {
  ASSIGN_OR_RETURN(const T raw, cursor.Read<T>(absl::StrCat("the value of '", key, "'")));
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return cursor.Error(absl::StrCat("'", key, "' holds ", raw, ", beyond the int64 range"));
    }
  }
  value.integer = static_cast<int64_t>(raw);
  return absl::OkStatus();
}

absl::Status ReadArray(Cursor& cursor, const std::string& key, int depth, GgufValue& value) {
  if (depth >= kGgufMaxArrayDepth) {
    return cursor.Error(absl::StrCat("'", key, "' nests arrays deeper than ", kGgufMaxArrayDepth));
  }
  ASSIGN_OR_RETURN(const uint32_t element_type,
                   cursor.Read<uint32_t>(absl::StrCat("the element type of '", key, "'")));
  if (!KnownType(element_type)) {
    return cursor.Error(absl::StrCat("'", key, "' is an array of unknown type ", element_type));
  }
  value.element_type = static_cast<GgufType>(element_type);
  ASSIGN_OR_RETURN(const uint64_t count,
                   cursor.Read<uint64_t>(absl::StrCat("the length of '", key, "'")));
  RETURN_IF_ERROR(cursor.CheckCount(count, MinValueBytes(value.element_type),
                                    absl::StrCat("array '", key, "'")));
  RETURN_IF_ERROR(cursor.CountArrayElements(count, key));
  value.elements.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(GgufValue element, ReadValue(cursor, value.element_type, key, depth + 1));
    value.elements.push_back(std::move(element));
  }
  return absl::OkStatus();
}

absl::StatusOr<GgufValue> ReadValue(Cursor& cursor, GgufType type, const std::string& key,
                                    int depth) {
  GgufValue value;
  value.type = type;
  const std::string what = absl::StrCat("the value of '", key, "'");
  switch (type) {
    case GgufType::kUint8:
      RETURN_IF_ERROR(ReadInteger<uint8_t>(cursor, key, value));
      break;
    case GgufType::kInt8:
      RETURN_IF_ERROR(ReadInteger<int8_t>(cursor, key, value));
      break;
    case GgufType::kUint16:
      RETURN_IF_ERROR(ReadInteger<uint16_t>(cursor, key, value));
      break;
    case GgufType::kInt16:
      RETURN_IF_ERROR(ReadInteger<int16_t>(cursor, key, value));
      break;
    case GgufType::kUint32:
      RETURN_IF_ERROR(ReadInteger<uint32_t>(cursor, key, value));
      break;
    case GgufType::kInt32:
      RETURN_IF_ERROR(ReadInteger<int32_t>(cursor, key, value));
      break;
    case GgufType::kUint64:
      RETURN_IF_ERROR(ReadInteger<uint64_t>(cursor, key, value));
      break;
    case GgufType::kInt64:
      RETURN_IF_ERROR(ReadInteger<int64_t>(cursor, key, value));
      break;
    case GgufType::kFloat32: {
      ASSIGN_OR_RETURN(const float raw, cursor.Read<float>(what));
      value.real = raw;
      break;
    }
    case GgufType::kFloat64: {
      ASSIGN_OR_RETURN(value.real, cursor.Read<double>(what));
      break;
    }
    case GgufType::kBool: {
      ASSIGN_OR_RETURN(const uint8_t raw, cursor.Read<uint8_t>(what));
      if (raw > 1) return cursor.Error(absl::StrCat("'", key, "' is a bool holding ", raw));
      value.boolean = raw == 1;
      break;
    }
    case GgufType::kString: {
      ASSIGN_OR_RETURN(value.text, cursor.ReadString(what));
      break;
    }
    case GgufType::kArray:
      RETURN_IF_ERROR(ReadArray(cursor, key, depth, value));
      break;
  }
  return value;
}

absl::Status ReadMetadata(Cursor& cursor, uint64_t count,
                          std::map<std::string, GgufValue, std::less<>>& metadata) {
  RETURN_IF_ERROR(cursor.CheckCount(count, 8 + 4 + 1, "the metadata count"));
  for (uint64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(std::string key, cursor.ReadString(absl::StrCat("metadata key #", i)));
    ASSIGN_OR_RETURN(const uint32_t type,
                     cursor.Read<uint32_t>(absl::StrCat("the type of '", key, "'")));
    if (!KnownType(type)) {
      return cursor.Error(absl::StrCat("'", key, "' has unknown value type ", type));
    }
    ASSIGN_OR_RETURN(GgufValue value, ReadValue(cursor, static_cast<GgufType>(type), key, 0));
    if (metadata.count(key) != 0) {
      return cursor.Error(absl::StrCat("repeats metadata key '", key, "'"));
    }
    metadata.emplace(std::move(key), std::move(value));
  }
  return absl::OkStatus();
}

// ggml's type numbers for the types Arbor loads, and the names of the ones it refuses.
absl::StatusOr<DType> TensorType(uint32_t ggml_type, const std::string& tensor,
                                 const Cursor& cursor) {
  switch (ggml_type) {
    case 0:
      return DType::kF32;
    case 1:
      return DType::kF16;
    case 2:
      return DType::kQ4_0;
    case 3:
      return DType::kQ4_1;
    case 6:
      return DType::kQ5_0;
    case 7:
      return DType::kQ5_1;
    case 8:
      return DType::kQ8_0;
    case 12:
      return DType::kQ4_K;
    case 13:
      return DType::kQ5_K;
    case 14:
      return DType::kQ6_K;
    case 30:
      return DType::kBF16;
  }
  static const std::map<uint32_t, const char*> kRefused = {
      {9, "Q8_1"},   {10, "Q2_K"},   {11, "Q3_K"},    {12, "Q4_K"},   {13, "Q5_K"},
      {14, "Q6_K"},  {15, "Q8_K"},   {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"},
      {19, "IQ1_S"}, {20, "IQ4_NL"}, {21, "IQ3_S"},   {22, "IQ2_S"},  {23, "IQ4_XS"},
      {24, "I8"},    {25, "I16"},    {26, "I32"},     {27, "I64"},    {28, "F64"},
      {29, "IQ1_M"}, {34, "TQ1_0"},  {35, "TQ2_0"},   {39, "MXFP4"}};
  auto it = kRefused.find(ggml_type);
  return cursor.Error(absl::StrCat(
      "tensor '", tensor, "' has type ",
      it == kRefused.end() ? absl::StrCat("number ", ggml_type, " (unknown)")
                           : absl::StrCat(it->second, " (", ggml_type, ")"),
      ", which Arbor cannot load; it loads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, "
      "Q5_K and Q6_K "
      "(re-quantize the model with llama.cpp's llama-quantize to one of them, e.g. Q4_K_M)"));
}

struct TensorInfo {
  TensorView view;
  uint64_t offset = 0;  // From the start of the data section.
};

absl::StatusOr<TensorInfo> ReadTensorInfo(Cursor& cursor, uint64_t index) {
  TensorInfo info;
  ASSIGN_OR_RETURN(info.view.name, cursor.ReadString(absl::StrCat("the name of tensor #", index)));
  const std::string& name = info.view.name;
  ASSIGN_OR_RETURN(const uint32_t dims,
                   cursor.Read<uint32_t>(absl::StrCat("the rank of tensor '", name, "'")));
  if (dims == 0 || dims > kGgufMaxDims) {
    return cursor.Error(absl::StrCat("tensor '", name, "' has ", dims, " dimensions (1 to ",
                                     kGgufMaxDims, " allowed)"));
  }
  std::vector<int64_t> ne(dims);
  uint64_t rows = 1;
  for (uint32_t d = 0; d < dims; ++d) {
    ASSIGN_OR_RETURN(const uint64_t size,
                     cursor.Read<uint64_t>(absl::StrCat("the shape of tensor '", name, "'")));
    if (size == 0 || size > (1ull << 40)) {
      return cursor.Error(absl::StrCat("tensor '", name, "' has dimension ", d, " of size ", size));
    }
    ne[d] = static_cast<int64_t>(size);
    if (d > 0) {
      if (rows > (1ull << 40) / size) {
        return cursor.Error(absl::StrCat("tensor '", name, "' is too large"));
      }
      rows *= size;
    }
  }
  ASSIGN_OR_RETURN(const uint32_t type,
                   cursor.Read<uint32_t>(absl::StrCat("the type of tensor '", name, "'")));
  ASSIGN_OR_RETURN(info.view.dtype, TensorType(type, name, cursor));
  ASSIGN_OR_RETURN(info.offset,
                   cursor.Read<uint64_t>(absl::StrCat("the offset of tensor '", name, "'")));
  const int64_t row_bytes = RowBytes(info.view.dtype, ne[0]);
  if (row_bytes < 0) {
    return cursor.Error(absl::StrCat("tensor '", name, "' has rows of ", ne[0], " weights, not a ",
                                     "whole number of ", DTypeName(info.view.dtype), " blocks of ",
                                     Layout(info.view.dtype).block_elements));
  }
  if (rows > (1ull << 50) / static_cast<uint64_t>(row_bytes)) {
    return cursor.Error(absl::StrCat("tensor '", name, "' is too large"));
  }
  info.view.nbytes = rows * static_cast<uint64_t>(row_bytes);
  info.view.shape.assign(ne.rbegin(), ne.rend());
  return info;
}

// Places every tensor inside the data section, aligned and without overlaps.
absl::Status PlaceTensors(std::vector<TensorInfo>& infos, absl::string_view data,
                          uint64_t alignment, const std::string& file) {
  std::vector<TensorInfo*> by_offset;
  for (TensorInfo& info : infos) by_offset.push_back(&info);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  uint64_t end_of_previous = 0;
  const std::string* previous = nullptr;
  for (TensorInfo* info : by_offset) {
    const std::string& name = info->view.name;
    if (info->offset % alignment != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": GGUF tensor '", name, "' starts at data offset ", info->offset,
                       ", not a multiple of the alignment ", alignment));
    }
    if (info->offset > data.size() || info->view.nbytes > data.size() - info->offset) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": GGUF tensor '", name, "' spans data bytes [", info->offset, ", ",
                       info->offset + info->view.nbytes, ") but the data section holds ",
                       data.size(), " bytes (truncated file?)"));
    }
    if (previous != nullptr && info->offset < end_of_previous) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": GGUF tensors '", *previous, "' and '", name, "' overlap"));
    }
    end_of_previous = info->offset + info->view.nbytes;
    previous = &name;
    info->view.data = data.data() + info->offset;
  }
  return absl::OkStatus();
}

}  // namespace

const char* GgufTypeName(GgufType type) {
  static constexpr const char* kNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                           "int32",  "float32", "bool",   "string", "array",
                                           "uint64", "int64",   "float64"};
  const auto index = static_cast<uint32_t>(type);
  return index < std::size(kNames) ? kNames[index] : "unknown";
}

bool IsGgufInteger(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, Parse(mapped->bytes(), path));
  file->file_ = std::move(mapped);
  return file;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(absl::string_view bytes,
                                                          const std::string& name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = name;
  Cursor cursor(bytes, file->path_);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return cursor.Error("magic is missing: this is not a GGUF file");
  }
  RETURN_IF_ERROR(cursor.Read<uint32_t>("the magic").status());
  ASSIGN_OR_RETURN(file->version_, cursor.Read<uint32_t>("the version"));
  if (file->version_ != 2 && file->version_ != 3) {
    return cursor.Error(absl::StrCat("version ", file->version_, " is not supported (2 and 3 are",
                                     file->version_ == 1
                                         ? "; re-convert this old file with a current llama.cpp)"
                                         : "; a big-endian file shows a byte-swapped version)"));
  }
  ASSIGN_OR_RETURN(const uint64_t tensor_count, cursor.Read<uint64_t>("the tensor count"));
  ASSIGN_OR_RETURN(const uint64_t metadata_count, cursor.Read<uint64_t>("the metadata count"));
  RETURN_IF_ERROR(ReadMetadata(cursor, metadata_count, file->metadata_));
  if (const GgufValue* alignment = file->Find(kAlignmentKey); alignment != nullptr) {
    if (alignment->type != GgufType::kUint32 || alignment->integer == 0 ||
        (alignment->integer & (alignment->integer - 1)) != 0) {
      return cursor.Error(absl::StrCat(kAlignmentKey, " must be a uint32 power of two"));
    }
    file->alignment_ = static_cast<uint64_t>(alignment->integer);
  }

  RETURN_IF_ERROR(cursor.CheckCount(tensor_count, 8 + 4 + 8 + 4 + 8, "the tensor count"));
  std::vector<TensorInfo> infos;
  infos.reserve(tensor_count);
  std::set<std::string, std::less<>> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    ASSIGN_OR_RETURN(TensorInfo info, ReadTensorInfo(cursor, i));
    if (!names.insert(info.view.name).second) {
      return cursor.Error(absl::StrCat("repeats tensor '", info.view.name, "'"));
    }
    infos.push_back(std::move(info));
  }
  const uint64_t data_start =
      (cursor.offset() + file->alignment_ - 1) / file->alignment_ * file->alignment_;
  const absl::string_view data =
      data_start <= bytes.size() ? bytes.substr(data_start) : absl::string_view();
  RETURN_IF_ERROR(PlaceTensors(infos, data, file->alignment_, file->path_));
  for (TensorInfo& info : infos) file->tensors_.push_back(std::move(info.view));
  return file;
}

const GgufValue* GgufFile::Find(absl::string_view key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

namespace {

absl::StatusOr<const GgufValue*> Typed(const GgufFile& file, absl::string_view key,
                                       absl::string_view expected, bool ok_type(const GgufValue&)) {
  const GgufValue* value = file.Find(key);
  if (value == nullptr) {
    return absl::NotFoundError(absl::StrCat(file.path(), ": GGUF metadata '", key, "' is missing"));
  }
  if (!ok_type(*value)) {
    return absl::InvalidArgumentError(absl::StrCat(file.path(), ": GGUF metadata '", key, "' is a ",
                                                   GgufTypeName(value->type), ", expected ",
                                                   expected));
  }
  return value;
}

}  // namespace

absl::StatusOr<std::string> GgufFile::GetString(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value, Typed(*this, key, "a string", [](const GgufValue& v) {
                     return v.type == GgufType::kString;
                   }));
  return value->text;
}

absl::StatusOr<int64_t> GgufFile::GetInt(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value, Typed(*this, key, "an integer", [](const GgufValue& v) {
                     return v.is_integer();
                   }));
  return value->integer;
}

absl::StatusOr<double> GgufFile::GetFloat(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value,
                   Typed(*this, key, "a float", [](const GgufValue& v) { return v.is_float(); }));
  return value->real;
}

absl::StatusOr<bool> GgufFile::GetBool(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value, Typed(*this, key, "a bool", [](const GgufValue& v) {
                     return v.type == GgufType::kBool;
                   }));
  return value->boolean;
}

absl::StatusOr<std::vector<std::string>> GgufFile::GetStrings(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value,
                   Typed(*this, key, "an array of strings", [](const GgufValue& v) {
                     return v.type == GgufType::kArray && v.element_type == GgufType::kString;
                   }));
  std::vector<std::string> out;
  out.reserve(value->elements.size());
  for (const GgufValue& element : value->elements) out.push_back(element.text);
  return out;
}

absl::StatusOr<std::vector<int64_t>> GgufFile::GetInts(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value,
                   Typed(*this, key, "an array of integers", [](const GgufValue& v) {
                     return v.type == GgufType::kArray && IsGgufInteger(v.element_type);
                   }));
  std::vector<int64_t> out;
  out.reserve(value->elements.size());
  for (const GgufValue& element : value->elements) out.push_back(element.integer);
  return out;
}

absl::StatusOr<std::vector<double>> GgufFile::GetFloats(absl::string_view key) const {
  ASSIGN_OR_RETURN(
      const GgufValue* value, Typed(*this, key, "an array of floats", [](const GgufValue& v) {
        return v.type == GgufType::kArray &&
               (v.element_type == GgufType::kFloat32 || v.element_type == GgufType::kFloat64);
      }));
  std::vector<double> out;
  out.reserve(value->elements.size());
  for (const GgufValue& element : value->elements) out.push_back(element.real);
  return out;
}

}  // namespace arbor::model
