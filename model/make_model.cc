#include "model/make_model.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/bf16.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "model/config_json.h"
#include "model/llama_tensors.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "model/synthetic_weights.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "nlohmann/json.hpp"

namespace arbor::model {
namespace {

using Json = nlohmann::json;

constexpr char kBeginOfText[] = "<|begin_of_text|>";
constexpr char kLlama3Preset[] = "llama-3.2-1b-shape";
constexpr char kQwen2Preset[] = "qwen2-tiny";
// Qwen2's special tokens, in Qwen2's order: <|endoftext|> is its bos (never prepended) and pad.
constexpr char kEndOfText[] = "<|endoftext|>";
constexpr char kImEnd[] = "<|im_end|>";
// Llama 3 keeps its 256 special tokens at the top of a 128,256-id vocabulary.
constexpr int kLlama3FirstSpecial = 128000;
// Floats generated per chunk when streaming a tensor: bounds memory for the 1B shape.
constexpr int64_t kChunkElements = 1 << 22;

// The special token at each id from `first` on. Llama-3-shaped models use Llama 3.1's exact
// layout (reserved tokens included); smaller ones put the trainer's specials at the very end.
std::vector<std::string> SpecialLayout(const ModelConfig& config, bool llama3_layout) {
  if (config.architecture == Architecture::kQwen2) return {kEndOfText, "<|im_start|>", kImEnd};
  std::vector<std::string> specials = Llama3SpecialTokens();
  if (!llama3_layout) return specials;
  std::map<int, std::string> fixed = {
      {0, "<|begin_of_text|>"},   {1, "<|end_of_text|>"},   {4, "<|finetune_right_pad_id|>"},
      {6, "<|start_header_id|>"}, {7, "<|end_header_id|>"}, {8, "<|eom_id|>"},
      {9, "<|eot_id|>"},          {10, "<|python_tag|>"}};
  std::vector<std::string> layout;
  int reserved = 0;
  for (int i = 0; i < config.vocab_size - kLlama3FirstSpecial; ++i) {
    auto it = fixed.find(i);
    layout.push_back(it != fixed.end()
                         ? it->second
                         : absl::StrCat("<|reserved_special_token_", reserved++, "|>"));
  }
  return layout;
}

// Trains the BPE and lays its ids out over the model's vocabulary: BPE tokens first, then
// never-produced filler tokens `<|reserved_filler_K|>` in the model vocabulary up to the first
// special id, then the special tokens as added tokens. Sets the config's bos and eos ids.
absl::StatusOr<std::string> BuildTokenizer(bool llama3_layout, ModelConfig* config) {
  const std::vector<std::string> specials = SpecialLayout(*config, llama3_layout);
  const int first_special = config->vocab_size - static_cast<int>(specials.size());
  const bool qwen2 = config->architecture == Architecture::kQwen2;
  BpeTrainerOptions options;
  options.special_tokens = qwen2 ? specials : Llama3SpecialTokens();
  options.vocab_size = first_special + static_cast<int>(options.special_tokens.size());
  ASSIGN_OR_RETURN(std::string trained, TrainByteLevelBpe(BuiltinCorpus(), options));
  Json tokenizer = Json::parse(trained, nullptr, /*allow_exceptions=*/false);
  if (tokenizer.is_discarded() || !tokenizer.contains("model") ||
      !tokenizer["model"].contains("vocab")) {
    return absl::InternalError("the BPE trainer returned an unexpected tokenizer.json");
  }
  Json& vocab = tokenizer["model"]["vocab"];
  const int bpe_size = static_cast<int>(vocab.size());
  for (int id = bpe_size; id < first_special; ++id) {
    vocab[absl::StrCat("<|reserved_filler_", id - bpe_size, "|>")] = id;
  }
  std::map<std::string, int> special_ids;
  Json added = Json::array();
  for (size_t i = 0; i < specials.size(); ++i) {
    const int id = first_special + static_cast<int>(i);
    special_ids[specials[i]] = id;
    added.push_back({{"id", id},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  tokenizer["added_tokens"] = added;
  if (qwen2) {
    // As Qwen2.5's tokenizer.json: NFC first, then Llama 3's words with every digit apart.
    tokenizer["normalizer"] = {{"type", "NFC"}};
    for (Json& stage : tokenizer["pre_tokenizer"]["pretokenizers"]) {
      if (stage["type"] == "Split") stage["pattern"]["Regex"] = std::string(kQwen2SplitPattern);
    }
    config->bos_token_id = special_ids.at(kEndOfText);
    config->eos_token_ids = {special_ids.at(kImEnd), special_ids.at(kEndOfText)};
    return tokenizer.dump(1, ' ', false, Json::error_handler_t::replace);
  }
  // The post-processor names begin_of_text's id: move it with the token.
  Json& post = tokenizer["post_processor"];
  if (post.is_object() && post.contains("processors") && post["processors"].is_array()) {
    for (Json& processor : post["processors"]) {
      if (!processor.contains("special_tokens")) continue;
      for (auto it = processor["special_tokens"].begin(); it != processor["special_tokens"].end();
           ++it) {
        it.value()["ids"] = Json::array({special_ids.at(it.key())});
      }
    }
  }
  config->bos_token_id = special_ids.at(kBeginOfText);
  config->eos_token_ids = {special_ids.at("<|end_of_text|>"), special_ids.at("<|eom_id|>"),
                           special_ids.at("<|eot_id|>")};
  return tokenizer.dump(1, ' ', false, Json::error_handler_t::replace);
}

std::string TokenizerConfigJson(const ModelConfig& config) {
  if (config.architecture == Architecture::kQwen2) {
    // As Qwen2.5's: no bos token, <|im_end|> ends a turn.
    Json root = {{"tokenizer_class", "Qwen2Tokenizer"},
                 {"bos_token", nullptr},
                 {"eos_token", kImEnd},
                 {"pad_token", kEndOfText},
                 {"model_max_length", config.max_position_embeddings},
                 {"clean_up_tokenization_spaces", false},
                 {"chat_template", ChatMLChatTemplate()}};
    return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  Json root = {{"tokenizer_class", "PreTrainedTokenizerFast"},
               {"bos_token", kBeginOfText},
               {"eos_token", "<|eot_id|>"},
               {"model_max_length", config.max_position_embeddings},
               {"clean_up_tokenization_spaces", true},
               {"chat_template", Llama3ChatTemplate()}};
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

absl::Status WriteWeights(const MakeModelOptions& options, const ModelConfig& config, DType dtype,
                          const std::string& path) {
  std::vector<TensorSpec> specs = LlamaTensorSpecs(config, dtype);
  ASSIGN_OR_RETURN(auto writer, SafetensorsWriter::Create(path, specs, {{"format", "pt"}}));
  std::vector<float> rows;
  std::vector<uint16_t> narrow;
  for (const TensorSpec& spec : specs) {
    const int64_t cols = spec.shape.back();
    const int64_t total_rows = spec.shape.size() == 1 ? 1 : spec.shape[0];
    const int64_t chunk_rows = std::max<int64_t>(1, kChunkElements / cols);
    for (int64_t row = 0; row < total_rows; row += chunk_rows) {
      const int64_t count = std::min(chunk_rows, total_rows - row);
      SyntheticRows(config, spec, options.seed, options.gain, row, count, &rows);
      if (dtype == DType::kF32) {
        RETURN_IF_ERROR(writer->Append(rows.data(), rows.size() * sizeof(float)));
      } else {
        narrow.resize(rows.size());
        for (size_t i = 0; i < rows.size(); ++i) narrow[i] = base::FloatToBf16(rows[i]);
        RETURN_IF_ERROR(writer->Append(narrow.data(), narrow.size() * sizeof(uint16_t)));
      }
      if (options.progress) options.progress(writer->written_bytes(), writer->total_bytes());
    }
  }
  return writer->Finish();
}

}  // namespace

std::vector<std::string> MakeModelPresets() {
  return {"tiny", "small", kLlama3Preset, kQwen2Preset};
}

absl::StatusOr<ModelConfig> PresetConfig(absl::string_view preset) {
  ModelConfig config;
  config.name = std::string(preset);
  config.rms_norm_eps = 1e-5f;
  if (preset == "tiny" || preset == kQwen2Preset) {
    config.num_layers = 2;
    config.hidden_size = 64;
    config.num_heads = 4;
    config.num_kv_heads = 2;
    config.head_dim = 16;
    config.intermediate_size = 128;
    config.vocab_size = 512;
    config.max_position_embeddings = 2048;
    if (preset == kQwen2Preset) {
      // tiny's shape as Qwen2.5 builds its small models: q/k/v biases, θ 1e6, tied embeddings.
      config.architecture = Architecture::kQwen2;
      config.max_position_embeddings = 4096;
      config.rms_norm_eps = 1e-6f;
      config.rope_theta = 1000000.0f;
      config.tie_word_embeddings = true;
    }
  } else if (preset == "small") {
    // Exercises llama3 rope scaling and GQA groups of 4 at a size the CPU runs quickly.
    config.num_layers = 4;
    config.hidden_size = 256;
    config.num_heads = 8;
    config.num_kv_heads = 2;
    config.head_dim = 32;
    config.intermediate_size = 688;
    config.vocab_size = 2048;
    config.max_position_embeddings = 8192;
    config.rope_theta = 500000.0f;
    config.rope_scaling = {RopeScaling::Type::kLlama3, 8.0f, 1.0f, 4.0f, 1024, {}};
  } else if (preset == kLlama3Preset) {  // docs/ARCHITECTURE.md §9: Llama-3.2-1B exactly.
    config.num_layers = 16;
    config.hidden_size = 2048;
    config.num_heads = 32;
    config.num_kv_heads = 8;
    config.head_dim = 64;
    config.intermediate_size = 8192;
    config.vocab_size = 128256;
    config.max_position_embeddings = 131072;
    config.rope_theta = 500000.0f;
    config.rope_scaling = {RopeScaling::Type::kLlama3, 32.0f, 1.0f, 4.0f, 8192, {}};
    config.tie_word_embeddings = true;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--preset '", preset, "' is unknown (",
                                                   absl::StrJoin(MakeModelPresets(), ", "), ")"));
  }
  return config;
}

absl::StatusOr<ModelConfig> MakeModel(const MakeModelOptions& options) {
  ASSIGN_OR_RETURN(ModelConfig config, PresetConfig(options.preset));
  const bool llama3_layout = options.preset == kLlama3Preset;
  const DType dtype = options.dtype.value_or(llama3_layout ? DType::kBF16 : DType::kF32);
  if (dtype == DType::kF16) {
    return absl::InvalidArgumentError("--dtype f16 is not offered by make-model (f32, bf16)");
  }
  if (!(options.gain >= 0.0f) || options.gain > 1000.0f) {
    return absl::InvalidArgumentError("--gain must be in [0, 1000]");
  }
  if (options.out_dir.empty()) return absl::InvalidArgumentError("--out is required");
  config.torch_dtype = dtype == DType::kF32 ? "float32" : "bfloat16";
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat(options.out_dir, ": cannot create: ", error.message()));
  }
  const std::string dir = options.out_dir + "/";
  ASSIGN_OR_RETURN(std::string tokenizer, BuildTokenizer(llama3_layout, &config));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "tokenizer.json", tokenizer));
  RETURN_IF_ERROR(
      base::WriteFileAtomically(dir + "tokenizer_config.json", TokenizerConfigJson(config)));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "config.json", ModelConfigToJson(config)));
  RETURN_IF_ERROR(
      base::WriteFileAtomically(dir + "generation_config.json", GenerationConfigToJson(config)));
  // Written under a temporary name so a crash never leaves a truncated checkpoint behind.
  const std::string weights = dir + "model.safetensors";
  RETURN_IF_ERROR(WriteWeights(options, config, dtype, weights + ".partial"));
  if (std::rename((weights + ".partial").c_str(), weights.c_str()) != 0) {
    return absl::InternalError(absl::StrCat(weights, ": rename failed"));
  }
  return config;
}

}  // namespace arbor::model
