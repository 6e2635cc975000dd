// Writes GGUF bytes for tests: typed metadata and tensors laid out as llama.cpp's writer does
// (header, metadata, tensor infos, padding to the alignment, aligned tensor data), with knobs to
// break each part. Small on purpose: the files the reader must accept also come from gguf-py in
// the reference tests.
#ifndef ARBOR_TESTS_MODEL_GGUF_BUILDER_H_
#define ARBOR_TESTS_MODEL_GGUF_BUILDER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace arbor::model::testing {

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3, uint64_t alignment = 32)
      : version_(version), alignment_(alignment) {}

  // Metadata: a raw value of `type` (numbered as in GGUF) with its little-endian bytes.
  GgufBuilder& Raw(const std::string& key, uint32_t type, const std::string& value_bytes) {
    Str(metadata_, key);
    Pod(metadata_, type);
    metadata_ += value_bytes;
    ++metadata_count_;
    return *this;
  }
  GgufBuilder& U32(const std::string& key, uint32_t v) { return Raw(key, 4, PodBytes(v)); }
  GgufBuilder& I32(const std::string& key, int32_t v) { return Raw(key, 5, PodBytes(v)); }
  GgufBuilder& F32(const std::string& key, float v) { return Raw(key, 6, PodBytes(v)); }
  GgufBuilder& Bool(const std::string& key, bool v) {
    return Raw(key, 7, std::string(1, v ? '\1' : '\0'));
  }
  GgufBuilder& String(const std::string& key, const std::string& v) {
    std::string bytes;
    Str(bytes, v);
    return Raw(key, 8, bytes);
  }
  GgufBuilder& Strings(const std::string& key, const std::vector<std::string>& values) {
    std::string bytes;
    Pod(bytes, uint32_t{8});
    Pod(bytes, uint64_t{values.size()});
    for (const std::string& v : values) Str(bytes, v);
    return Raw(key, 9, bytes);
  }
  GgufBuilder& I32s(const std::string& key, const std::vector<int32_t>& values) {
    std::string bytes;
    Pod(bytes, uint32_t{5});
    Pod(bytes, uint64_t{values.size()});
    for (int32_t v : values) Pod(bytes, v);
    return Raw(key, 9, bytes);
  }

  // A tensor of ggml type `type` with ne = `ne` (innermost first) and `data`; its offset is the
  // next aligned one unless `offset` is given.
  GgufBuilder& Tensor(const std::string& name, uint32_t type, const std::vector<uint64_t>& ne,
                      const std::string& data, int64_t offset = -1) {
    Str(infos_, name);
    Pod(infos_, static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) Pod(infos_, d);
    Pod(infos_, type);
    const uint64_t at = offset >= 0 ? static_cast<uint64_t>(offset) : Align(data_.size());
    Pod(infos_, at);
    if (data_.size() < at) data_.resize(at, '\0');
    if (data_.size() < at + data.size()) data_.resize(at + data.size(), '\0');
    std::memcpy(data_.data() + at, data.data(), data.size());
    ++tensor_count_;
    return *this;
  }

  std::string Build() const {
    std::string out = "GGUF";
    Pod(out, version_);
    Pod(out, tensor_count_);
    Pod(out, metadata_count_);
    out += metadata_;
    out += infos_;
    out.resize(Align(out.size()), '\0');
    out += data_;
    return out;
  }

  template <typename T>
  static std::string PodBytes(T v) {
    return std::string(reinterpret_cast<const char*>(&v), sizeof(T));
  }

 private:
  template <typename T>
  static void Pod(std::string& out, T v) {
    out += PodBytes(v);
  }
  static void Str(std::string& out, const std::string& s) {
    Pod(out, uint64_t{s.size()});
    out += s;
  }
  uint64_t Align(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }

  uint32_t version_;
  uint64_t alignment_;
  uint64_t tensor_count_ = 0;
  uint64_t metadata_count_ = 0;
  std::string metadata_, infos_, data_;
};

}  // namespace arbor::model::testing

#endif  // ARBOR_TESTS_MODEL_GGUF_BUILDER_H_
