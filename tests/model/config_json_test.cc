// config.json / generation_config.json parsing: real configs (Llama 3.2, Qwen2.5, Qwen3), every
// refusal naming its field, and random configs of every architecture round-tripping through
// ModelConfigToJson.
#include "model/config_json.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_seed.h"

namespace arbor::model {
namespace {

using ::testing::HasSubstr;

constexpr char kLlama32[] = R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
 "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
 "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192,
 "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
 "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
 "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
 "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
 "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
 "vocab_size": 128256})";

// Qwen2.5-0.5B-Instruct's config.json.
constexpr char kQwen25[] = R"({"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
 "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896,
 "initializer_range": 0.02, "intermediate_size": 4864, "max_position_embeddings": 32768,
 "max_window_layers": 21, "model_type": "qwen2", "num_attention_heads": 14,
 "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
 "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
 "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": true,
 "use_sliding_window": false, "vocab_size": 151936})";

// Qwen3-0.6B's config.json: head_dim 128 beside hidden 1024 / 16 heads, no q/k/v biases
// (attention_bias false), sliding_window null.
constexpr char kQwen3[] = R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
 "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128,
 "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
 "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
 "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
 "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
 "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
 "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

nlohmann::json Base() { return nlohmann::json::parse(kLlama32); }

std::string ErrorOf(const nlohmann::json& config, const std::string& generation = "") {
  absl::StatusOr<ModelConfig> parsed = ParseModelConfig(config.dump(), generation);
  return parsed.ok() ? "OK" : std::string(parsed.status().message());
}

TEST(ConfigJson, ParsesLlama32) {
  absl::StatusOr<ModelConfig> config = ParseModelConfig(
      kLlama32, R"({"eos_token_id": [128001, 128009, 7], "bos_token_id": 128000})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->hidden_size, 2048);
  EXPECT_EQ(config->num_layers, 16);
  EXPECT_EQ(config->num_kv_heads, 8);
  EXPECT_EQ(config->head_dim, 64);
  EXPECT_EQ(config->rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(config->rope_scaling.factor, 32.0f);
  EXPECT_EQ(config->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->bos_token_id, 128000);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int>{128001, 128008, 128009, 7}));
}

TEST(ConfigJson, DefaultsAndIntEos) {
  nlohmann::json config = Base();
  for (const char* key : {"head_dim", "num_key_value_heads", "rope_scaling", "rms_norm_eps",
                          "rope_theta", "tie_word_embeddings"}) {
    config.erase(key);
  }
  config["eos_token_id"] = 2;
  absl::StatusOr<ModelConfig> parsed = ParseModelConfig(config.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->num_kv_heads, 32);
  EXPECT_EQ(parsed->head_dim, 64);
  EXPECT_EQ(parsed->rope_theta, 10000.0f);
  EXPECT_FALSE(parsed->tie_word_embeddings);
  EXPECT_EQ(parsed->eos_token_ids, std::vector<int>{2});
}

TEST(ConfigJson, RefusalsNameTheField) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* expected;
  };
  const Case cases[] = {
      {"architectures",
       {"Gemma2ForCausalLM"},
       "'architectures' names 'Gemma2ForCausalLM', which is not supported (supported: "
       "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)"},
      {"attention_bias", true, "'attention_bias' is true"},
      {"mlp_bias", true, "'mlp_bias' is true"},
      {"num_local_experts", 8, "'num_local_experts' is set"},
      {"sliding_window", 4096, "'sliding_window' is set"},
      {"hidden_act", "gelu", "'hidden_act'"},
      {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4}}, "'rope_scaling.rope_type'"},
      {"num_key_value_heads", 5, "'num_key_value_heads' = 5 does not divide"},
      {"head_dim", 63, "'head_dim' = 63 is odd"},
      {"hidden_size", "2048", "'hidden_size' is not an integer"},
      {"num_hidden_layers", -1, "'num_hidden_layers' = -1 is out of range"},
      // Sizes are bounded before anything is sized from them (1e9 layers allocated
      // gigabytes of tensor specs).
      {"num_hidden_layers", 1000000000,
       "'num_hidden_layers' = 1000000000 is out of range [1, 4096]"},
      {"vocab_size", 1 << 30, "'vocab_size' = 1073741824 is out of range [1, 16777216]"},
      {"intermediate_size", 1 << 30, "'intermediate_size' = 1073741824 is out of range"},
      {"num_key_value_heads", 64, "'num_key_value_heads' = 64 is out of range [1, 32]"},
      {"bos_token_id", {1, 2}, "'bos_token_id' lists several"},
      {"eos_token_id", "x", "'eos_token_id' must be a token id"},
      {"eos_token_id", 128256, "'eos_token_id' = 128256 is not below vocab_size"},
      {"rms_norm_eps", 0, "'rms_norm_eps' must be a finite number > 0"},
  };
  for (const Case& c : cases) {
    nlohmann::json config = Base();
    config[c.key] = c.value;
    EXPECT_THAT(ErrorOf(config), HasSubstr(c.expected)) << c.key;
  }
  nlohmann::json config = Base();
  config.erase("vocab_size");
  EXPECT_THAT(ErrorOf(config), HasSubstr("'vocab_size' is missing"));
  config = Base();
  config.erase("head_dim");
  config["num_attention_heads"] = 30;
  config["num_key_value_heads"] = 10;
  EXPECT_THAT(ErrorOf(config), HasSubstr("'hidden_size' = 2048 is not a multiple"));
  EXPECT_THAT(ErrorOf(Base(), "{\"eos_token_id\": [1.5]}"),
              HasSubstr("generation_config.json: field 'eos_token_id'"));
  EXPECT_EQ(ParseModelConfig("{\"hidden_size\": ").status().message(),
            "config.json: not valid JSON");
  EXPECT_THAT(std::string(ParseModelConfig("[1]").status().message()),
              HasSubstr("not a JSON object"));
}

TEST(ConfigJson, MistralWithoutSlidingWindowIsLlama) {
  nlohmann::json config = Base();
  config["architectures"] = {"MistralForCausalLM"};
  config["sliding_window"] = nullptr;
  EXPECT_EQ(ErrorOf(config), "OK");
}

TEST(ConfigJson, ParsesQwen25) {
  absl::StatusOr<ModelConfig> config =
      ParseModelConfig(kQwen25, R"({"eos_token_id": [151645, 151643], "bos_token_id": 151643})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, Architecture::kQwen2);
  EXPECT_TRUE(config->qkv_bias());
  EXPECT_EQ(config->hidden_size, 896);
  EXPECT_EQ(config->num_heads, 14);
  EXPECT_EQ(config->num_kv_heads, 2);
  EXPECT_EQ(config->head_dim, 64);
  EXPECT_EQ(config->rope_theta, 1e6f);
  EXPECT_EQ(config->rms_norm_eps, 1e-6f);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->bos_token_id, 151643);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int>{151645, 151643}));
  // model_type alone names it too; a Llama config is not one.
  nlohmann::json by_type = nlohmann::json::parse(kQwen25);
  by_type.erase("architectures");
  EXPECT_EQ(ParseModelConfig(by_type.dump())->architecture, Architecture::kQwen2);
  EXPECT_EQ(ParseModelConfig(kLlama32)->architecture, Architecture::kLlama);
  EXPECT_FALSE(ParseModelConfig(kLlama32)->qkv_bias());
}

TEST(ConfigJson, Qwen2RefusesSlidingWindowAndUnknownTypes) {
  nlohmann::json config = nlohmann::json::parse(kQwen25);
  config["use_sliding_window"] = true;
  EXPECT_EQ(ErrorOf(config),
            "config.json: field 'use_sliding_window' is true: sliding-window attention is not "
            "supported (use false)");
  config = nlohmann::json::parse(kQwen25);
  config.erase("use_sliding_window");  // Qwen2Config's default is false.
  EXPECT_EQ(ErrorOf(config), "OK");
  config.erase("architectures");
  config["model_type"] = "qwen2_moe";
  EXPECT_EQ(
      ErrorOf(config),
      "config.json: field 'model_type' = 'qwen2_moe' is not supported (llama, mistral, qwen2, "
      "qwen3)");
}

TEST(ConfigJson, ParsesQwen3) {
  absl::StatusOr<ModelConfig> config = ParseModelConfig(kQwen3);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, Architecture::kQwen3);
  EXPECT_TRUE(Describe(config->architecture).qk_norm);
  EXPECT_FALSE(config->qkv_bias());
  EXPECT_EQ(config->hidden_size, 1024);
  EXPECT_EQ(config->num_heads, 16);
  EXPECT_EQ(config->num_kv_heads, 8);
  EXPECT_EQ(config->head_dim, 128);  // Not hidden / heads (64).
  EXPECT_EQ(config->rope_theta, 1e6f);
  EXPECT_EQ(config->rms_norm_eps, 1e-6f);
  EXPECT_EQ(config->rope_scaling.type, RopeScaling::Type::kNone);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->bos_token_id, 151643);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int>{151645}));
  // model_type alone names it too; neither Llama nor Qwen2 has q/k norms.
  nlohmann::json by_type = nlohmann::json::parse(kQwen3);
  by_type.erase("architectures");
  EXPECT_EQ(ParseModelConfig(by_type.dump())->architecture, Architecture::kQwen3);
  EXPECT_FALSE(Describe(ParseModelConfig(kQwen25)->architecture).qk_norm);
  EXPECT_FALSE(Describe(ParseModelConfig(kLlama32)->architecture).qk_norm);
  // Written back, it reads as the same model.
  EXPECT_EQ(ModelConfigToJson(*ParseModelConfig(ModelConfigToJson(*config))),
            ModelConfigToJson(*config));
}

TEST(ConfigJson, Qwen3RefusesBiasesSlidingWindowAndMoe) {
  // attention_bias adds o_proj's bias too, which Arbor does not compute.
  nlohmann::json config = nlohmann::json::parse(kQwen3);
  config["attention_bias"] = true;
  EXPECT_EQ(ErrorOf(config),
            "config.json: field 'attention_bias' is true: biases are not supported");
  config = nlohmann::json::parse(kQwen3);
  config["use_sliding_window"] = true;
  config["sliding_window"] = 4096;
  EXPECT_THAT(ErrorOf(config), HasSubstr("'use_sliding_window' is true"));
  config = nlohmann::json::parse(kQwen3);
  config["sliding_window"] = 4096;  // Off while use_sliding_window is false.
  EXPECT_EQ(ErrorOf(config), "OK");
  config = nlohmann::json::parse(kQwen3);
  config["architectures"] = {"Qwen3MoeForCausalLM"};
  EXPECT_THAT(ErrorOf(config), HasSubstr("'Qwen3MoeForCausalLM', which is not supported"));
  config.erase("architectures");
  config["model_type"] = "qwen3_moe";
  EXPECT_THAT(ErrorOf(config), HasSubstr("'qwen3_moe' is not supported"));
}

TEST(ConfigJson, RandomConfigsRoundTrip) {
  const unsigned seed = TestSeed();
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    ModelConfig config;
    config.num_kv_heads = 1 + rng() % 8;
    config.num_heads = config.num_kv_heads * (1 + rng() % 4);
    config.head_dim = 2 * (1 + rng() % 64);
    config.hidden_size = 1 + rng() % 5000;
    config.intermediate_size = 1 + rng() % 20000;
    config.num_layers = 1 + rng() % 80;
    config.vocab_size = 10 + rng() % 200000;
    config.max_position_embeddings = 1 + rng() % 200000;
    config.rms_norm_eps = std::uniform_real_distribution<float>(1e-7f, 1e-3f)(rng);
    config.rope_theta = std::uniform_real_distribution<float>(100.0f, 1e7f)(rng);
    config.tie_word_embeddings = rng() % 2;
    config.architecture = static_cast<Architecture>(rng() % std::size(kArchitectures));
    config.rope_scaling.type = static_cast<RopeScaling::Type>(rng() % 3);
    if (config.rope_scaling.type != RopeScaling::Type::kNone) {
      config.rope_scaling.factor = std::uniform_real_distribution<float>(1.0f, 64.0f)(rng);
    }
    config.bos_token_id = rng() % 2 ? -1 : static_cast<int>(rng() % config.vocab_size);
    for (int i = rng() % 4; i > 0; --i) config.eos_token_ids.push_back(rng() % config.vocab_size);
    std::sort(config.eos_token_ids.begin(), config.eos_token_ids.end());
    config.eos_token_ids.erase(
        std::unique(config.eos_token_ids.begin(), config.eos_token_ids.end()),
        config.eos_token_ids.end());
    config.name = "model-" + std::to_string(trial);
    config.torch_dtype = "float32";
    absl::StatusOr<ModelConfig> back =
        ParseModelConfig(ModelConfigToJson(config), GenerationConfigToJson(config));
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << ModelConfigToJson(config);
    EXPECT_EQ(ModelConfigToJson(*back), ModelConfigToJson(config));
    EXPECT_EQ(back->architecture, config.architecture);
    EXPECT_EQ(back->rope_theta, config.rope_theta);
    EXPECT_EQ(back->rms_norm_eps, config.rms_norm_eps);
    EXPECT_EQ(back->eos_token_ids, config.eos_token_ids);
    EXPECT_EQ(back->bos_token_id, config.bos_token_id);
  }
}

}  // namespace
}  // namespace arbor::model
