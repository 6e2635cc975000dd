// Qwen2 (Qwen2 / Qwen2.5: Llama's forward plus q/k/v projection biases) end to end on the CPU
// backend. `arbor make-model --preset qwen2-tiny` writes a Hugging Face directory as Qwen2.5's
// look (model_type qwen2, biases in model.safetensors, θ 1e6, tied embeddings, use_sliding_window
// false beside a sliding_window size); loaded as a user's directory is, its logits match the
// independent float64 PyTorch forward (tests/model/llama_reference.py, which adds the biases it
// finds) at several prompt lengths. The same weights written as llama.cpp's converter writes a
// qwen2 GGUF (qwen2.* keys, blk.N.attn_{q,k,v}.bias, q/k rows not permuted) give the very same
// logits. The checks and their tolerance are hf_reference_check.h's.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "model/make_model.h"
#include "tests/support/test_seed.h"
#include "tests/worker/backend/hf_reference_check.h"
#include "worker/backend/cpu_backend.h"

namespace arbor::worker {
namespace {

class Qwen2ReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    seed_ = TestSeed();
    dir_ = testing::SuiteModelPath("qwen2-reference");
    model::MakeModelOptions options;
    options.preset = "qwen2-tiny";
    options.out_dir = dir_;
    options.seed = seed_;
    absl::StatusOr<model::ModelConfig> config = model::MakeModel(options);
    ASSERT_TRUE(config.ok()) << config.status();
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  static uint32_t seed_;
  static std::string dir_;
};
uint32_t Qwen2ReferenceTest::seed_ = 0;
std::string Qwen2ReferenceTest::dir_;

TEST_F(Qwen2ReferenceTest, DirectoryMatchesTheFloat64Reference) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  absl::StatusOr<std::unique_ptr<CpuBackend>> backend = testing::ServeOnCpu(dir_);
  ASSERT_TRUE(backend.ok()) << backend.status();
  const model::ModelConfig& config = (*backend)->config();
  ASSERT_EQ(config.architecture, model::Architecture::kQwen2);
  ASSERT_TRUE(config.tie_word_embeddings);
  ASSERT_EQ(config.rope_theta, 1e6f);
  testing::ExpectMatchesFloat64Reference(**backend, dir_, seed_);
}

TEST_F(Qwen2ReferenceTest, GgufOfTheSameWeightsGivesTheSameLogits) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed_);
  const std::string path = dir_ + ".gguf";
  ASSERT_NO_FATAL_FAILURE(testing::WriteGgufOfDirectory(dir_, "qwen2", "qwen2-tiny", path));
  absl::StatusOr<std::unique_ptr<CpuBackend>> from_gguf = testing::ServeOnCpu(path);
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status();
  EXPECT_EQ((*from_gguf)->config().architecture, model::Architecture::kQwen2);
  EXPECT_TRUE((*from_gguf)->config().tie_word_embeddings);
  testing::ExpectSameLogitsAsDirectory(**from_gguf, dir_, seed_);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace arbor::worker
