// GGUF, the single-file model format of llama.cpp (also what Ollama and LM Studio keep on disk):
// a header of typed key/value metadata and tensor descriptions, then aligned tensor data. This
// reader memory-maps the file, checks every count, length, size and offset against the bytes
// actually present before allocating anything, and serves tensors as zero-copy views. It knows
// nothing of any architecture: gguf_llama.h maps the `llama` keys and tensors onto Arbor's.
//
// Versions 2 and 3, little-endian. Tensor types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K (every type of the popular Q4_K_M / Q5_K_M mixes, fallbacks included); any
// other ggml type is refused with its name.
#ifndef ARBOR_MODEL_GGUF_H_
#define ARBOR_MODEL_GGUF_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/mapped_file.h"
#include "model/tensor.h"

namespace arbor::model {

// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
const char* GgufTypeName(GgufType type);
bool IsGgufInteger(GgufType type);

// One metadata value. Integers of every width land in `integer` (a uint64 above INT64_MAX is
// refused at load), floats in `real`, strings in `text`; an array keeps its element type and
// elements (arrays of arrays nest).
struct GgufValue {
  GgufType type = GgufType::kUint8;
  int64_t integer = 0;
  double real = 0;
  bool boolean = false;
  std::string text;
  GgufType element_type = GgufType::kUint8;  // Arrays only.
  std::vector<GgufValue> elements;           // Arrays only.

  bool is_integer() const { return IsGgufInteger(type); }
  bool is_float() const { return type == GgufType::kFloat32 || type == GgufType::kFloat64; }
};

// Limits that keep a malformed or hostile header from exhausting memory or the stack.
inline constexpr uint64_t kGgufMaxStringBytes = 1ull << 26;  // 64 MiB (chat templates are KiB).
inline constexpr int kGgufMaxArrayDepth = 8;
// Array elements in the whole header (a Llama 3 vocabulary and its merges are ~410 k); bounds the
// memory a header of many tiny elements could claim.
inline constexpr uint64_t kGgufMaxArrayElements = 1ull << 22;
inline constexpr uint32_t kGgufMaxDims = 4;

class GgufFile {
 public:
  // Maps and validates `path`. Errors name the file and what is wrong: bad magic, an unsupported
  // version, a count or length that overruns the file, an unknown value type, a duplicate key or
  // tensor name, an alignment that is not a power of two, a tensor with an unknown or unsupported
  // type, a zero or overflowing dimension, a row that is not a whole number of blocks, or data
  // outside the file, misaligned or overlapping another tensor's.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // The same over bytes already in memory (fuzzing, tests); `bytes` must outlive the result.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Parse(absl::string_view bytes,
                                                         const std::string& name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }

  // Metadata, by key.
  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
  const GgufValue* Find(absl::string_view key) const;
  // Typed accessors: NOT_FOUND when absent, INVALID_ARGUMENT naming the key on a type mismatch.
  absl::StatusOr<std::string> GetString(absl::string_view key) const;
  absl::StatusOr<int64_t> GetInt(absl::string_view key) const;   // Any integer type.
  absl::StatusOr<double> GetFloat(absl::string_view key) const;  // float32 or float64.
  absl::StatusOr<bool> GetBool(absl::string_view key) const;
  // An array of strings / of integers / of floats.
  absl::StatusOr<std::vector<std::string>> GetStrings(absl::string_view key) const;
  absl::StatusOr<std::vector<int64_t>> GetInts(absl::string_view key) const;
  absl::StatusOr<std::vector<double>> GetFloats(absl::string_view key) const;

  // Tensors in file order. Shapes are row-major (the reverse of ggml's ne order): a matrix of
  // ne = [cols, rows] is served as [rows, cols].
  const std::vector<TensorView>& tensors() const { return tensors_; }

 private:
  GgufFile() = default;

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<TensorView> tensors_;
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_GGUF_H_
