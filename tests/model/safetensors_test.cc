// safetensors: writer → reader round trips on random tensors, and each malformed file giving its
// own error naming the file and tensor.
#include "model/safetensors.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/safetensors_writer.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_seed.h"

namespace arbor::model {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return std::string(ARBOR_BINARY_DIR) + "/tests/safetensors_test_" + std::to_string(getpid()) +
         "_" + name;
}

// A file made of the 8-byte length, `header` and `data_bytes` zero bytes.
std::string FileWithHeader(const std::string& header, size_t data_bytes) {
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return file + header + std::string(data_bytes, '\0');
}

std::string ErrorOf(const std::string& bytes) {
  auto parsed = ParseSafetensors(bytes, "bad.safetensors");
  return parsed.ok() ? "OK" : std::string(parsed.status().message());
}

TEST(Safetensors, RandomRoundTrip) {
  const unsigned seed = TestSeed();
  std::mt19937 rng(seed);
  std::vector<TensorSpec> specs;
  std::vector<std::string> contents;
  for (int i = 0; i < 12; ++i) {
    // absl::StrCat, not "t" + std::string: GCC 12's -Wrestrict false positive (bug 105329).
    TensorSpec spec{absl::StrCat("t", rng() % 1000, "_", i),
                    static_cast<DType>(rng() % 3),
                    {}};
    for (int d = rng() % 4; d > 0; --d) spec.shape.push_back(rng() % 7);
    std::string bytes(spec.nbytes(), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    specs.push_back(spec);
    contents.push_back(bytes);
  }
  const std::string path = TempPath("roundtrip.safetensors");
  auto writer = SafetensorsWriter::Create(path, specs, {{"format", "pt"}});
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const std::string& bytes : contents) {
    // Odd-sized pieces: the writer must not care where the caller cuts.
    for (size_t at = 0; at < bytes.size(); at += 5) {
      ASSERT_TRUE(
          (*writer)->Append(bytes.data() + at, std::min<size_t>(5, bytes.size() - at)).ok());
    }
  }
  EXPECT_FALSE((*writer)->Append("x", 1).ok());
  ASSERT_TRUE((*writer)->Finish().ok());

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ((*file)->tensors().size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorView* view = nullptr;
    for (const TensorView& t : (*file)->tensors()) {
      if (t.name == specs[i].name) view = &t;
    }
    ASSERT_NE(view, nullptr) << specs[i].name;
    EXPECT_EQ(view->dtype, specs[i].dtype);
    EXPECT_EQ(view->shape, specs[i].shape);
    ASSERT_EQ(view->nbytes, contents[i].size());
    EXPECT_EQ(std::memcmp(view->data, contents[i].data(), view->nbytes), 0) << specs[i].name;
  }
  // The data section starts 8-byte aligned, as the format asks.
  auto bytes = base::ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(static_cast<uint8_t>((*bytes)[0]) % 8, 0);
  std::remove(path.c_str());
}

TEST(Safetensors, WriterRefusesMissingBytes) {
  const std::string path = TempPath("short.safetensors");
  auto writer = SafetensorsWriter::Create(path, {{"a", DType::kF32, {2}}});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append("1234", 4).ok());
  EXPECT_THAT(std::string((*writer)->Finish().message()), HasSubstr("only 4 of 8"));
  std::remove(path.c_str());
}

TEST(Safetensors, MalformedFilesGiveSpecificErrors) {
  const std::string good =
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "__metadata__": {}})";
  EXPECT_EQ(ErrorOf(FileWithHeader(good, 8)), "OK");
  EXPECT_THAT(ErrorOf("abc"), HasSubstr("bad.safetensors: truncated: 3 bytes"));
  EXPECT_THAT(ErrorOf(FileWithHeader(good, 8).substr(0, 20)),
              HasSubstr("truncated: header length"));
  std::string huge(8, '\0');
  huge[5] = 0x10;  // 2^44 bytes.
  EXPECT_THAT(ErrorOf(huge), HasSubstr("exceeds the limit"));
  EXPECT_THAT(ErrorOf(FileWithHeader("{\"a\": ", 0)), HasSubstr("header is not a JSON object"));
  // A truncated data section puts the tensor's offsets out of range.
  EXPECT_THAT(ErrorOf(FileWithHeader(good, 7)),
              HasSubstr("tensor 'a': data_offsets [0, 8) out of range"));
  EXPECT_THAT(
      ErrorOf(FileWithHeader(R"({"a": {"dtype": "I8", "shape": [2], "data_offsets": [0, 2]}})", 2)),
      HasSubstr("tensor 'a': dtype 'I8' is not supported"));
  EXPECT_THAT(ErrorOf(FileWithHeader(
                  R"({"a": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 8]}})", 8)),
              HasSubstr("tensor 'a': data_offsets span 8 bytes but dtype BF16 × shape needs 6"));
  EXPECT_THAT(
      ErrorOf(FileWithHeader(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                        "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                             8)),
      HasSubstr("tensor 'b': data overlaps tensor 'a'"));
  EXPECT_THAT(ErrorOf(FileWithHeader(
                  R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8)),
              HasSubstr("tensor 'a': shape holds"));
  EXPECT_THAT(
      ErrorOf(FileWithHeader(
          R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})",
          8)),
      HasSubstr("tensor 'a': shape is too large"));
  EXPECT_THAT(ErrorOf(FileWithHeader(
                  R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 8)),
              HasSubstr("begin <= end"));
  auto missing = SafetensorsFile::Open(TempPath("does_not_exist"));
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
}

}  // namespace
}  // namespace arbor::model
