// The CPU dequantizer of GGUF blocks (kernels/quant/quant_blocks.h) against llama.cpp's own Python
// package: `gguf.quants.dequantize` on the same bytes. Fresh random blocks every run (the seed is
// printed): random packed integers and random finite f16 scales and minimums of both signs,
// subnormals included; 1 and 3 rows of 1, 2 and 5 blocks per type (Q8_0, Q4_0, Q4_1, the
// K-quants Q4_K, Q5_K, Q6_K with random 6- and 8-bit sub-block scales, and F16 and BF16 rows). Both
// sides compute d·q (+ m) in fp32, so they must agree to the last bit except where one side fuses
// the multiply-add (allowed: 1 ulp, i.e. |Δ| ≤ 2^-23 · |w| + 2^-149). A row that is not a whole
// number of blocks is refused by gguf-py too, as the GGUF reader refuses it (gguf_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "kernels/quant/quant_blocks.h"
#include "model/dtype.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {
namespace {

// A random finite half: any sign, exponent 0 (subnormal) to 30, any mantissa.
uint16_t RandomHalf(std::mt19937& rng) {
  const uint16_t sign = (rng() & 1) << 15;
  const uint16_t exponent = std::uniform_int_distribution<uint16_t>(0, 30)(rng);
  return static_cast<uint16_t>(sign | exponent << 10 | (rng() & 0x3ff));
}

// `rows` rows of `cols` random weights of `dtype`.
std::string RandomRows(model::DType dtype, int rows, int64_t cols, std::mt19937& rng) {
  const model::DTypeLayout layout = model::Layout(dtype);
  std::string bytes(static_cast<size_t>(rows * model::RowBytes(dtype, cols)), '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  // The f16 fields of each block are finite; an f16 or bf16 weight is one such field
  // (RandomHalf's bits are finite in both encodings).
  for (size_t b = 0; b < bytes.size(); b += layout.block_bytes) {
    for (int offset : model::HalfFieldOffsets(dtype)) {
      const uint16_t half = RandomHalf(rng);
      std::memcpy(&bytes[b + offset], &half, 2);
    }
  }
  return bytes;
}

const char kScript[] = R"(
import sys, numpy as np, gguf
from gguf.quants import dequantize
kind = getattr(gguf.GGMLQuantizationType, sys.argv[1])
rows = int(sys.argv[2])
raw = np.fromfile(sys.argv[3], dtype=np.uint8).reshape(rows, -1)
dequantize(raw, kind).astype(np.float32).tofile(sys.argv[4])
block, size = gguf.GGML_QUANT_SIZES[kind]
if block > 1:
    try:
        dequantize(np.zeros((2, size + 1), np.uint8), kind)
        print('accepted a partial block')
    except ValueError:
        pass
)";

TEST(QuantBlocksReference, DequantizeMatchesGgufPy) {
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  const std::string base =
      absl::StrCat(std::filesystem::temp_directory_path().string(), "/quant-blocks-", getpid());
  for (model::DType dtype :
       {model::DType::kQ8_0, model::DType::kQ4_0, model::DType::kQ4_1, model::DType::kQ5_0,
        model::DType::kQ5_1, model::DType::kQ4_K, model::DType::kQ5_K, model::DType::kQ6_K,
        model::DType::kF16, model::DType::kBF16}) {
    for (int rows : {1, 3}) {
      for (int blocks : {1, 2, 5}) {
        SCOPED_TRACE(absl::StrCat(model::DTypeName(dtype), " rows ", rows, " blocks ", blocks));
        const int64_t cols =
            int64_t{blocks} * std::max(kQuantBlock, model::Layout(dtype).block_elements);
        const std::string bytes = RandomRows(dtype, rows, cols, rng);
        ASSERT_TRUE(base::WriteFileAtomically(base + ".in", bytes).ok());
        const std::string command =
            absl::StrCat(ARBOR_PYTHON, " -c \"$0\" ", model::DTypeName(dtype), " ", rows, " ", base,
                         ".in ", base, ".out > ", base, ".log 2>&1");
        auto child = base::Subprocess::Start({"/bin/sh", "-c", command, kScript});
        ASSERT_TRUE(child.ok()) << child.status();
        ASSERT_EQ(child->Wait(absl::Seconds(60)), 0) << base::ReadFile(base + ".log").value_or("");
        EXPECT_EQ(base::ReadFile(base + ".log").value_or("?"), "");
        const std::string want = base::ReadFile(base + ".out").value_or("");
        const int64_t n = rows * cols;
        ASSERT_EQ(want.size(), static_cast<size_t>(n) * 4);
        std::vector<float> got(n);
        const int64_t row_bytes = model::RowBytes(dtype, cols);
        for (int r = 0; r < rows; ++r) {
          DequantizeRow(dtype, bytes.data() + r * row_bytes, cols, got.data() + r * cols);
        }
        for (int64_t i = 0; i < n; ++i) {
          float w;
          std::memcpy(&w, want.data() + 4 * i, 4);
          ASSERT_LE(std::abs(got[i] - w), std::ldexp(std::abs(w), -23) + std::ldexp(1.0f, -149))
              << "weight " << i << ": Arbor " << got[i] << ", gguf-py " << w;
        }
      }
    }
  }
  for (const char* suffix : {".in", ".out", ".log"}) std::filesystem::remove(base + suffix);
}

// QuantizeRowQ8_0 (what --weights_dtype=q8_0 applies to f32 and bf16 checkpoints) against
// gguf.quants.quantize: identical blocks, byte for byte, on random rows with a zero block.
TEST(QuantBlocksReference, QuantizeQ8_0MatchesGgufPy) {
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const int64_t rows = 3, cols = 8 * kQuantBlock;
  std::vector<float> x(rows * cols);
  for (float& v : x) v = normal(rng);
  std::fill(x.begin(), x.begin() + kQuantBlock, 0.0f);
  std::vector<BlockQ8_0> blocks(rows * cols / kQuantBlock);
  QuantizeRowQ8_0(x.data(), rows * cols, blocks.data());
  const std::string base =
      absl::StrCat(std::filesystem::temp_directory_path().string(), "/quantize-q8-", getpid());
  ASSERT_TRUE(base::WriteFileAtomically(
                  base + ".in",
                  std::string(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float)))
                  .ok());
  const char script[] =
      "import sys, numpy as np, gguf\n"
      "x = np.fromfile(sys.argv[1], dtype=np.float32).reshape(int(sys.argv[3]), -1)\n"
      "gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q8_0).tofile(sys.argv[2])\n";
  auto child = base::Subprocess::Start(
      {ARBOR_PYTHON, "-c", script, base + ".in", base + ".out", std::to_string(rows)});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_EQ(child->Wait(absl::Seconds(60)), 0);
  const std::string want = base::ReadFile(base + ".out").value_or("");
  ASSERT_EQ(want.size(), blocks.size() * sizeof(BlockQ8_0));
  for (size_t b = 0; b < blocks.size(); ++b) {
    ASSERT_EQ(std::memcmp(want.data() + b * sizeof(BlockQ8_0), &blocks[b], sizeof(BlockQ8_0)), 0)
        << "block " << b;
  }
  for (const char* suffix : {".in", ".out"}) std::filesystem::remove(base + suffix);
}

}  // namespace
}  // namespace arbor::kernels
