// The make-model checkpoint seen through the Hugging Face `safetensors` package (ground truth for
// the file format) and the float64 PyTorch reference: the tiny preset's next-token distributions
// must reach every entropix quadrant.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "base/files.h"
#include "base/subprocess.h"
#include "gtest/gtest.h"
#include "model/make_model.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_seed.h"

namespace arbor::model {
namespace {

class ReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(ARBOR_BINARY_DIR) + "/tests/reference_test_" + std::to_string(getpid()) +
           "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `args` under the project Python, stdout to a file; returns the parsed JSON output.
  nlohmann::json RunPython(std::vector<std::string> args) {
    args.insert(args.begin(), ARBOR_PYTHON);
    const std::string out = dir_ + ".out";
    std::filesystem::remove(out);
    auto child = base::Subprocess::Start({"/bin/sh", "-c", ShellJoin(args) + " > " + out});
    EXPECT_TRUE(child.ok());
    if (!child.ok()) return nullptr;
    EXPECT_EQ(child->Wait(absl::Seconds(250)), 0);
    auto text = base::ReadFile(out);
    std::filesystem::remove(out);
    return text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nullptr;
  }

  static std::string ShellJoin(const std::vector<std::string>& args) {
    std::string joined;
    for (const std::string& arg : args) joined += "'" + arg + "' ";
    return joined;
  }

  std::string dir_;
};

TEST_F(ReferenceTest, SafetensorsPackageReadsMakeModelOutput) {
  for (const char* dtype : {"f32", "bf16"}) {
    MakeModelOptions options;
    options.out_dir = dir_;
    options.seed = 7;
    options.dtype = std::string(dtype) == "f32" ? DType::kF32 : DType::kBF16;
    absl::StatusOr<ModelConfig> config = MakeModel(options);
    ASSERT_TRUE(config.ok()) << config.status();
    // No single quotes: the arguments travel single-quoted through sh.
    const std::string script =
        "import json,sys\n"
        "from safetensors import safe_open\n"
        "f = safe_open(sys.argv[1] + \"/model.safetensors\", \"pt\")\n"
        "out = {k: [list(f.get_tensor(k).shape), str(f.get_tensor(k).dtype),\n"
        "           float(f.get_tensor(k).float().abs().sum())] for k in f.keys()}\n"
        "from tokenizers import Tokenizer\n"
        "t = Tokenizer.from_file(sys.argv[1] + \"/tokenizer.json\")\n"
        "specials = [t.token_to_id(s) for s in [\"<|begin_of_text|>\", \"<|end_of_text|>\",\n"
        "            \"<|eom_id|>\", \"<|eot_id|>\"]]\n"
        "print(json.dumps({\"tensors\": out, \"metadata\": f.metadata(),\n"
        "                  \"vocab\": t.get_vocab_size(), \"specials\": specials}))\n";
    nlohmann::json result = RunPython({"-c", script, dir_});
    ASSERT_TRUE(result.is_object());
    EXPECT_EQ(result["metadata"]["format"], "pt");
    EXPECT_EQ(result["tensors"].size(), 2u + 2 * 9 + 1);
    EXPECT_EQ(result["tensors"]["model.embed_tokens.weight"][0], nlohmann::json({512, 64}));
    EXPECT_EQ(result["tensors"]["model.layers.1.mlp.down_proj.weight"][1],
              std::string(dtype) == "f32" ? "torch.float32" : "torch.bfloat16");
    EXPECT_EQ(result["tensors"]["model.norm.weight"][2], 64.0);  // gain 1 everywhere.
    // The tokenizer loads in Hugging Face `tokenizers` and its ids fill the model's vocabulary.
    EXPECT_EQ(result["vocab"], config->vocab_size);
    std::vector<int> specials = {config->bos_token_id};
    specials.insert(specials.end(), config->eos_token_ids.begin(), config->eos_token_ids.end());
    EXPECT_EQ(result["specials"], nlohmann::json(specials));
    std::filesystem::remove_all(dir_);
  }
}

TEST_F(ReferenceTest, TinyPresetMeetsEveryEntropixQuadrant) {
  const unsigned seed = TestSeed() % 1000000;
  MakeModelOptions options;
  options.out_dir = dir_;
  options.seed = seed;
  ASSERT_TRUE(MakeModel(options).ok());
  nlohmann::json result = RunPython(
      {std::string(ARBOR_SOURCE_DIR) + "/tests/model/quadrant_coverage.py", dir_, "--contexts",
       "150", "--seed", std::to_string(seed), "--generate", "60", "--generations", "10"});
  ASSERT_TRUE(result.is_object());
  printf("%s\n", result.dump().c_str());
  for (const char* quadrant : {"LELV", "HELV", "LEHV", "HEHV", "ADAPTIVE"}) {
    EXPECT_GT(result["contexts"][quadrant].get<int>(), 0) << quadrant << " over random contexts";
    // Several short generations from random starts: one long one can settle where a quadrant
    // never comes (a model seed whose 400-token walk never met HELV). Ten, not five: model seed
    // 474789 meets HELV in 0.5 % of its tokens, none in five generations and three in ten, where
    // twenty other seeds meet every quadrant at least twelve times in ten.
    EXPECT_GT(result["generation"][quadrant].get<int>(), 0) << quadrant << " in 10 generations";
  }
}

}  // namespace
}  // namespace arbor::model
