// Checkpoint loading: make-model output for every preset loads with the expected tensors and
// values; broken directories give errors naming the tensor or field.
#include "model/checkpoint.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "base/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/config_json.h"
#include "model/llama_tensors.h"
#include "model/make_model.h"
#include "model/safetensors_writer.h"
#include "model/synthetic_weights.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_seed.h"

namespace arbor::model {
namespace {

using ::testing::HasSubstr;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(ARBOR_BINARY_DIR) + "/tests/checkpoint_test_" + std::to_string(getpid()) +
           "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `config` and a weights file holding `specs` (zero-filled) into dir_.
  void WriteCheckpoint(const ModelConfig& config, const std::vector<TensorSpec>& specs,
                       const std::string& file = "model.safetensors") {
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(base::WriteFileAtomically(dir_ + "/config.json", ModelConfigToJson(config)).ok());
    auto writer = SafetensorsWriter::Create(dir_ + "/" + file, specs);
    ASSERT_TRUE(writer.ok());
    std::string zeros((*writer)->total_bytes(), '\0');
    ASSERT_TRUE((*writer)->Append(zeros.data(), zeros.size()).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
  }

  std::string OpenError() {
    auto checkpoint = Checkpoint::Open(dir_);
    return checkpoint.ok() ? "OK" : std::string(checkpoint.status().message());
  }

  std::string dir_;
};

ModelConfig Tiny() { return *PresetConfig("tiny"); }

// The start-up log's line: what was loaded, from the config and the tensors as stored.
TEST_F(CheckpointTest, DescribeNamesArchitectureShapeAndTypes) {
  MakeModelOptions options;
  options.preset = "qwen2-tiny";
  options.out_dir = dir_;
  options.dtype = DType::kBF16;
  ASSERT_TRUE(MakeModel(options).ok());
  auto checkpoint = Checkpoint::Open(dir_);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  // 2 layers × (2 norms + 7 matrices + 3 biases) + embedding + final norm; tied.
  EXPECT_EQ((*checkpoint)->Describe(),
            "qwen2 'qwen2-tiny': 2 layers, 4 query / 2 KV heads × 16, hidden 64, context 4096, "
            "vocab 512, tied embeddings; tensors BF16 ×26");
}

TEST_F(CheckpointTest, TinyAndSmallRoundTrip) {
  const uint64_t seed = TestSeed();
  for (const char* preset : {"tiny", "small"}) {
    MakeModelOptions options;
    options.preset = preset;
    options.out_dir = dir_;
    options.seed = seed;
    options.gain = 1.5f;
    auto made = MakeModel(options);
    ASSERT_TRUE(made.ok()) << made.status();
    uint64_t last_checked = 0, total = 0;
    auto checkpoint = Checkpoint::Open(dir_, [&](uint64_t checked, uint64_t all) {
      EXPECT_GE(checked, last_checked);
      last_checked = checked;
      total = all;
    });
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    const ModelConfig& config = (*checkpoint)->config();
    EXPECT_EQ(ModelConfigToJson(config), ModelConfigToJson(*made));
    EXPECT_EQ(last_checked, total);
    EXPECT_EQ(total, (*checkpoint)->weight_bytes());
    // Every tensor holds exactly what the generator produces for it.
    const std::vector<TensorSpec> specs = LlamaTensorSpecs(config, DType::kF32);
    EXPECT_EQ((*checkpoint)->TensorNames().size(), specs.size());
    std::vector<float> expected;
    for (const TensorSpec& spec : specs) {
      auto tensor = (*checkpoint)->Tensor(spec.name);
      ASSERT_TRUE(tensor.ok()) << tensor.status();
      EXPECT_EQ(tensor->shape, spec.shape);
      EXPECT_EQ(tensor->dtype, DType::kF32);
      SyntheticRows(config, spec, seed, 1.5f, 0, spec.shape.size() == 1 ? 1 : spec.shape[0],
                    &expected);
      ASSERT_EQ(tensor->nbytes, expected.size() * sizeof(float));
      EXPECT_EQ(std::memcmp(tensor->data, expected.data(), tensor->nbytes), 0) << spec.name;
    }
    EXPECT_EQ((*checkpoint)->LmHead().name, "lm_head.weight");
    EXPECT_TRUE(absl::IsNotFound((*checkpoint)->Tensor("nope").status()));
    std::filesystem::remove_all(dir_);
  }
}

TEST_F(CheckpointTest, Llama1bShapeMatchesDesign) {
  // Writing the 2.5 GB preset is left to `arbor make-model`; its layout is checked here.
  auto config = PresetConfig("llama-3.2-1b-shape");
  ASSERT_TRUE(config.ok());
  uint64_t bytes = 0;
  for (const TensorSpec& spec : LlamaTensorSpecs(*config, DType::kBF16)) bytes += spec.nbytes();
  EXPECT_EQ(bytes,
            2471628800ull);  // 1,235,814,400 parameters in bf16 (docs/ARCHITECTURE.md §9: 2.47 GB).
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->rope_scaling.factor, 32.0f);
  auto again = ParseModelConfig(ModelConfigToJson(*config));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->num_kv_heads * again->head_dim * 2 * 2 * again->num_layers, 32 * 1024);
}

TEST_F(CheckpointTest, MissingTensor) {
  std::vector<TensorSpec> specs = LlamaTensorSpecs(Tiny(), DType::kBF16);
  specs.erase(specs.begin() + 3);  // model.layers.0.self_attn.k_proj.weight
  WriteCheckpoint(Tiny(), specs);
  EXPECT_THAT(OpenError(), HasSubstr("tensor 'model.layers.0.self_attn.k_proj.weight' is missing"));
}

TEST_F(CheckpointTest, MisShapedTensor) {
  std::vector<TensorSpec> specs = LlamaTensorSpecs(Tiny(), DType::kF16);
  specs.back().shape = {512, 63};
  WriteCheckpoint(Tiny(), specs);
  EXPECT_THAT(OpenError(), HasSubstr("tensor 'lm_head.weight' has shape [512, 63] but "
                                     "config.json implies [512, 64]"));
}

// A Qwen2 config needs its q/k/v biases; the same tensors under a Llama config are refused.
TEST_F(CheckpointTest, Qwen2BiasesAreRequiredWhereTheyBelong) {
  ModelConfig qwen2 = Tiny();
  qwen2.architecture = Architecture::kQwen2;
  WriteCheckpoint(qwen2, LlamaTensorSpecs(Tiny(), DType::kF32));
  EXPECT_THAT(OpenError(), HasSubstr("tensor 'model.layers.0.self_attn.q_proj.bias' is missing "
                                     "(expected shape [64])"));
  WriteCheckpoint(qwen2, LlamaTensorSpecs(qwen2, DType::kF32));
  EXPECT_EQ(OpenError(), "OK");
  WriteCheckpoint(Tiny(), LlamaTensorSpecs(qwen2, DType::kF32));
  EXPECT_THAT(OpenError(),
              HasSubstr("tensor 'model.layers.0.self_attn.k_proj.bias' is not part of a Llama "
                        "model with this config.json"));
}

TEST_F(CheckpointTest, UnexpectedTensorAndUnknownArchitecture) {
  std::vector<TensorSpec> specs = LlamaTensorSpecs(Tiny(), DType::kF32);
  specs.push_back({"model.layers.0.self_attn.q_proj.bias", DType::kF32, {64}});
  specs.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", DType::kF32, {8}});
  WriteCheckpoint(Tiny(), specs);
  EXPECT_THAT(OpenError(), HasSubstr("tensor 'model.layers.0.self_attn.q_proj.bias' is not part"));
  nlohmann::json config = nlohmann::json::parse(ModelConfigToJson(Tiny()));
  config["architectures"] = {"GPT2LMHeadModel"};
  ASSERT_TRUE(base::WriteFileAtomically(dir_ + "/config.json", config.dump()).ok());
  EXPECT_THAT(OpenError(), HasSubstr("'architectures' names 'GPT2LMHeadModel'"));
  ASSERT_TRUE(base::WriteFileAtomically(dir_ + "/config.json", "{").ok());
  EXPECT_THAT(OpenError(), HasSubstr("config.json: not valid JSON"));
}

TEST_F(CheckpointTest, NonFiniteWeight) {
  ModelConfig config = Tiny();
  std::vector<TensorSpec> specs = LlamaTensorSpecs(config, DType::kBF16);
  std::filesystem::create_directories(dir_);
  ASSERT_TRUE(base::WriteFileAtomically(dir_ + "/config.json", ModelConfigToJson(config)).ok());
  auto writer = SafetensorsWriter::Create(dir_ + "/model.safetensors", specs);
  ASSERT_TRUE(writer.ok());
  std::string bytes((*writer)->total_bytes(), '\0');
  bytes[bytes.size() - 1] = static_cast<char>(0x7f);  // Last bf16 of lm_head: 0x7f80 = +inf.
  bytes[bytes.size() - 2] = static_cast<char>(0x80);
  ASSERT_TRUE((*writer)->Append(bytes.data(), bytes.size()).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_THAT(OpenError(), HasSubstr("tensor 'lm_head.weight' holds NaN or infinite values"));
}

TEST_F(CheckpointTest, ShardedIndex) {
  ModelConfig config = Tiny();
  std::vector<TensorSpec> specs = LlamaTensorSpecs(config, DType::kF32);
  const std::vector<TensorSpec> first(specs.begin(), specs.begin() + 5);
  const std::vector<TensorSpec> second(specs.begin() + 5, specs.end());
  WriteCheckpoint(config, first, "model-00001-of-00002.safetensors");
  WriteCheckpoint(config, second, "model-00002-of-00002.safetensors");
  nlohmann::json index = {{"metadata", {{"total_size", 0}}},
                          {"weight_map", nlohmann::json::object()}};
  for (const TensorSpec& spec : first)
    index["weight_map"][spec.name] = "model-00001-of-00002.safetensors";
  for (const TensorSpec& spec : second)
    index["weight_map"][spec.name] = "model-00002-of-00002.safetensors";
  const std::string index_path = dir_ + "/model.safetensors.index.json";
  ASSERT_TRUE(base::WriteFileAtomically(index_path, index.dump()).ok());
  EXPECT_EQ(OpenError(), "OK");
  index["weight_map"][specs[0].name] = "model-00002-of-00002.safetensors";
  ASSERT_TRUE(base::WriteFileAtomically(index_path, index.dump()).ok());
  EXPECT_THAT(OpenError(), HasSubstr("which does not hold it"));
  index["weight_map"][specs[0].name] = "../model-00001-of-00002.safetensors";
  ASSERT_TRUE(base::WriteFileAtomically(index_path, index.dump()).ok());
  EXPECT_THAT(OpenError(), HasSubstr("is not a file in the directory"));
}

TEST_F(CheckpointTest, TruncatedWeightsFile) {
  WriteCheckpoint(Tiny(), LlamaTensorSpecs(Tiny(), DType::kF32));
  const std::string path = dir_ + "/model.safetensors";
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  EXPECT_THAT(OpenError(), HasSubstr("model.safetensors: tensor 'lm_head.weight': data_offsets"));
  std::filesystem::remove(path);
  EXPECT_THAT(OpenError(), HasSubstr("neither model.safetensors nor"));
}

}  // namespace
}  // namespace arbor::model
