#include "model/config_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace arbor::model {
namespace {

using Json = nlohmann::json;

absl::Status FieldError(absl::string_view file, absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": field '", field, "' ", why));
}

// Parses `text` as a JSON object without letting an exception escape.
absl::StatusOr<Json> ParseObject(absl::string_view text, absl::string_view file) {
  Json root = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return absl::InvalidArgumentError(absl::StrCat(file, ": not valid JSON"));
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": top level is not a JSON object"));
  }
  return root;
}

// A present, non-null member, or nullptr.
const Json* Member(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

// An integer member in [min, max]; nullopt when absent or null.
absl::StatusOr<std::optional<int>> OptionalInt(const Json& object, const char* key,
                                               absl::string_view file, int64_t min = 1,
                                               int64_t max = std::numeric_limits<int>::max()) {
  const Json* value = Member(object, key);
  if (value == nullptr) return std::optional<int>();
  if (!value->is_number_integer()) return FieldError(file, key, "is not an integer");
  // Unsigned values above int64 range would wrap; compare in the unsigned domain first.
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(max)) {
    return FieldError(
        file, key,
        absl::StrCat("= ", value->get<uint64_t>(), " is out of range [", min, ", ", max, "]"));
  }
  const int64_t v = value->get<int64_t>();
  if (v < min || v > max) {
    return FieldError(file, key, absl::StrCat("= ", v, " is out of range [", min, ", ", max, "]"));
  }
  return std::optional<int>(static_cast<int>(v));
}

absl::StatusOr<int> RequiredInt(const Json& object, const char* key, absl::string_view file,
                                int64_t max = std::numeric_limits<int>::max()) {
  ASSIGN_OR_RETURN(std::optional<int> value, OptionalInt(object, key, file, 1, max));
  if (!value) return FieldError(file, key, "is missing");
  return *value;
}

// A finite number > 0; nullopt when absent or null.
absl::StatusOr<std::optional<double>> OptionalPositive(const Json& object, const char* key,
                                                       absl::string_view file) {
  const Json* value = Member(object, key);
  if (value == nullptr) return std::optional<double>();
  if (!value->is_number()) return FieldError(file, key, "is not a number");
  const double v = value->get<double>();
  // Stored as float: the value must stay finite and non-zero there too.
  const float narrowed = static_cast<float>(v);
  if (!std::isfinite(narrowed) || narrowed <= 0) {
    return FieldError(file, key, "must be a finite number > 0 (within float range)");
  }
  return std::optional<double>(v);
}

absl::StatusOr<std::optional<bool>> OptionalBool(const Json& object, const char* key,
                                                 absl::string_view file) {
  const Json* value = Member(object, key);
  if (value == nullptr) return std::optional<bool>();
  if (!value->is_boolean()) return FieldError(file, key, "is not a boolean");
  return std::optional<bool>(value->get<bool>());
}

absl::StatusOr<std::optional<std::string>> OptionalString(const Json& object, const char* key,
                                                          absl::string_view file) {
  const Json* value = Member(object, key);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string()) return FieldError(file, key, "is not a string");
  return std::optional<std::string>(value->get<std::string>());
}

// Token ids given as an int or a list of ints (HF writes both); absent or null gives none.
absl::StatusOr<std::vector<int>> TokenIds(const Json& object, const char* key,
                                          absl::string_view file) {
  const Json* value = Member(object, key);
  std::vector<int> ids;
  if (value == nullptr) return ids;
  auto add = [&](const Json& item) -> absl::Status {
    if (!item.is_number_integer() || item.get<int64_t>() < 0 ||
        item.get<int64_t>() > std::numeric_limits<int>::max() ||
        (item.is_number_unsigned() &&
         item.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int>::max()))) {
      return FieldError(file, key, "must be a token id (an integer >= 0) or a list of them");
    }
    ids.push_back(static_cast<int>(item.get<int64_t>()));
    return absl::OkStatus();
  };
  if (value->is_array()) {
    for (const Json& item : *value) RETURN_IF_ERROR(add(item));
  } else {
    RETURN_IF_ERROR(add(*value));
  }
  return ids;
}

void AddUnique(const std::vector<int>& ids, std::vector<int>* into) {
  for (int id : ids) {
    if (std::find(into->begin(), into->end(), id) == into->end()) into->push_back(id);
  }
}

absl::StatusOr<Architecture> CheckArchitecture(const Json& root, absl::string_view file) {
  const Json* architectures = Member(root, "architectures");
  if (architectures != nullptr) {
    if (!architectures->is_array() || architectures->size() != 1 ||
        !(*architectures)[0].is_string()) {
      return FieldError(file, "architectures", "must be a list of one string");
    }
    const std::string name = (*architectures)[0].get<std::string>();
    if (const ArchitectureInfo* info = FindByHfClass(name)) return info->id;
    return FieldError(file, "architectures",
                      absl::StrCat("names '", name, "', which is not supported (supported: ",
                                   ServedHfClasses(), ")"));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> model_type, OptionalString(root, "model_type", file));
  if (!model_type) return FieldError(file, "architectures", "is missing (and so is model_type)");
  if (const ArchitectureInfo* info = FindByModelType(*model_type)) return info->id;
  return FieldError(
      file, "model_type",
      absl::StrCat("= '", *model_type, "' is not supported (", ServedModelTypes(), ")"));
}

// Options that would change the forward pass: refuse them rather than compute something else.
absl::Status CheckUnsupported(const Json& root, absl::string_view file, Architecture architecture) {
  // Where q/k/v biases are part of the architecture its config has no such switch; a Llama
  // config asking for biases means o_proj ones too, which Arbor does not compute.
  const ArchitectureInfo& info = Describe(architecture);
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    if (info.qkv_bias && absl::string_view(key) == "attention_bias") continue;
    ASSIGN_OR_RETURN(std::optional<bool> bias, OptionalBool(root, key, file));
    if (bias.value_or(false)) return FieldError(file, key, "is true: biases are not supported");
  }
  for (const char* key : {"num_local_experts", "num_experts", "num_experts_per_tok",
                          "n_routed_experts", "moe_intermediate_size"}) {
    const Json* value = Member(root, key);
    if (value != nullptr && !(value->is_number() && value->get<double>() == 0)) {
      return FieldError(file, key, "is set: mixture-of-experts models are not supported");
    }
  }
  if (info.sliding_window_switch) {
    // Such configs carry a sliding_window size even when it is off; use_sliding_window decides.
    ASSIGN_OR_RETURN(std::optional<bool> sliding, OptionalBool(root, "use_sliding_window", file));
    if (sliding.value_or(false)) {
      return FieldError(file, "use_sliding_window",
                        "is true: sliding-window attention is not supported (use false)");
    }
  } else if (Member(root, "sliding_window") != nullptr) {
    return FieldError(file, "sliding_window",
                      "is set: sliding-window attention is not supported (use null)");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> act, OptionalString(root, "hidden_act", file));
  if (act && *act != "silu") {
    return FieldError(file, "hidden_act", absl::StrCat("= '", *act, "' is not supported (silu)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RopeScaling> ParseRopeScaling(const Json& root, absl::string_view file) {
  RopeScaling scaling;
  const Json* value = Member(root, "rope_scaling");
  if (value == nullptr) return scaling;
  if (!value->is_object()) return FieldError(file, "rope_scaling", "is not an object or null");
  // Newer configs say rope_type, older ones type.
  ASSIGN_OR_RETURN(std::optional<std::string> type, OptionalString(*value, "rope_type", file));
  if (!type) {
    ASSIGN_OR_RETURN(type, OptionalString(*value, "type", file));
  }
  if (!type) return FieldError(file, "rope_scaling.rope_type", "is missing");
  if (*type == "default") return scaling;
  if (*type != "linear" && *type != "llama3") {
    return FieldError(file, "rope_scaling.rope_type",
                      absl::StrCat("= '", *type, "' is not supported (default, linear, llama3)"));
  }
  ASSIGN_OR_RETURN(std::optional<double> factor, OptionalPositive(*value, "factor", file));
  if (!factor) return FieldError(file, "rope_scaling.factor", "is missing");
  scaling.factor = static_cast<float>(*factor);
  if (*type == "linear") {
    scaling.type = RopeScaling::Type::kLinear;
    return scaling;
  }
  scaling.type = RopeScaling::Type::kLlama3;
  ASSIGN_OR_RETURN(std::optional<double> low, OptionalPositive(*value, "low_freq_factor", file));
  ASSIGN_OR_RETURN(std::optional<double> high, OptionalPositive(*value, "high_freq_factor", file));
  ASSIGN_OR_RETURN(std::optional<int> original,
                   OptionalInt(*value, "original_max_position_embeddings", file));
  if (!low || !high || !original) {
    return FieldError(file, "rope_scaling",
                      "of type llama3 needs low_freq_factor, high_freq_factor and "
                      "original_max_position_embeddings");
  }
  if (*high <= *low) {
    return FieldError(file, "rope_scaling.high_freq_factor", "must exceed low_freq_factor");
  }
  scaling.low_freq_factor = static_cast<float>(*low);
  scaling.high_freq_factor = static_cast<float>(*high);
  scaling.original_max_position_embeddings = *original;
  return scaling;
}

absl::Status ParseShape(const Json& root, absl::string_view file, ModelConfig* config) {
  ASSIGN_OR_RETURN(config->hidden_size, RequiredInt(root, "hidden_size", file, kMaxDim));
  ASSIGN_OR_RETURN(config->intermediate_size,
                   RequiredInt(root, "intermediate_size", file, kMaxDim));
  ASSIGN_OR_RETURN(config->num_layers, RequiredInt(root, "num_hidden_layers", file, kMaxLayers));
  ASSIGN_OR_RETURN(config->num_heads, RequiredInt(root, "num_attention_heads", file, kMaxHeads));
  ASSIGN_OR_RETURN(config->vocab_size, RequiredInt(root, "vocab_size", file, kMaxVocab));
  ASSIGN_OR_RETURN(std::optional<int> kv_heads,
                   OptionalInt(root, "num_key_value_heads", file, 1, config->num_heads));
  config->num_kv_heads = kv_heads.value_or(config->num_heads);
  if (config->num_heads % config->num_kv_heads != 0) {
    return FieldError(file, "num_key_value_heads",
                      absl::StrCat("= ", config->num_kv_heads, " does not divide ",
                                   "num_attention_heads = ", config->num_heads));
  }
  ASSIGN_OR_RETURN(std::optional<int> head_dim,
                   OptionalInt(root, "head_dim", file, 2, kMaxHeadDim));
  if (head_dim) {
    config->head_dim = *head_dim;
  } else {
    if (config->hidden_size % config->num_heads != 0) {
      return FieldError(
          file, "hidden_size",
          absl::StrCat("= ", config->hidden_size, " is not a multiple of num_attention_heads = ",
                       config->num_heads, " (and head_dim is not given)"));
    }
    config->head_dim = config->hidden_size / config->num_heads;
  }
  if (config->head_dim % 2 != 0) {
    return FieldError(
        file, "head_dim",
        absl::StrCat("= ", config->head_dim, " is odd; rotary embeddings need it even"));
  }
  // q_proj is [num_heads * head_dim, hidden]: keep every product inside int.
  if (static_cast<int64_t>(config->num_heads) * config->head_dim >
      std::numeric_limits<int>::max()) {
    return FieldError(file, "head_dim", "× num_attention_heads overflows");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view config_json,
                                             absl::string_view generation_config_json) {
  constexpr absl::string_view kFile = "config.json";
  ASSIGN_OR_RETURN(Json root, ParseObject(config_json, kFile));
  ModelConfig config;
  ASSIGN_OR_RETURN(config.architecture, CheckArchitecture(root, kFile));
  RETURN_IF_ERROR(CheckUnsupported(root, kFile, config.architecture));
  RETURN_IF_ERROR(ParseShape(root, kFile, &config));
  ASSIGN_OR_RETURN(std::optional<int> max_positions,
                   OptionalInt(root, "max_position_embeddings", kFile));
  if (!max_positions) return FieldError(kFile, "max_position_embeddings", "is missing");
  config.max_position_embeddings = *max_positions;
  ASSIGN_OR_RETURN(std::optional<double> eps, OptionalPositive(root, "rms_norm_eps", kFile));
  config.rms_norm_eps = static_cast<float>(eps.value_or(1e-6));  // HF LlamaConfig's default.
  ASSIGN_OR_RETURN(std::optional<double> theta, OptionalPositive(root, "rope_theta", kFile));
  config.rope_theta = static_cast<float>(theta.value_or(10000.0));
  ASSIGN_OR_RETURN(config.rope_scaling, ParseRopeScaling(root, kFile));
  ASSIGN_OR_RETURN(std::optional<bool> tie, OptionalBool(root, "tie_word_embeddings", kFile));
  config.tie_word_embeddings = tie.value_or(false);
  ASSIGN_OR_RETURN(std::optional<std::string> dtype, OptionalString(root, "torch_dtype", kFile));
  config.torch_dtype = dtype.value_or("");
  ASSIGN_OR_RETURN(std::optional<std::string> name, OptionalString(root, "_name_or_path", kFile));
  config.name = name.value_or("");

  ASSIGN_OR_RETURN(std::vector<int> bos, TokenIds(root, "bos_token_id", kFile));
  ASSIGN_OR_RETURN(std::vector<int> eos, TokenIds(root, "eos_token_id", kFile));
  AddUnique(eos, &config.eos_token_ids);
  if (!generation_config_json.empty()) {
    constexpr absl::string_view kGenFile = "generation_config.json";
    ASSIGN_OR_RETURN(Json generation, ParseObject(generation_config_json, kGenFile));
    ASSIGN_OR_RETURN(std::vector<int> gen_bos, TokenIds(generation, "bos_token_id", kGenFile));
    ASSIGN_OR_RETURN(std::vector<int> gen_eos, TokenIds(generation, "eos_token_id", kGenFile));
    if (bos.empty()) bos = gen_bos;
    AddUnique(gen_eos, &config.eos_token_ids);
  }
  if (bos.size() > 1) return FieldError(kFile, "bos_token_id", "lists several ids; expected one");
  config.bos_token_id = bos.empty() ? -1 : bos[0];
  for (int id : bos) {
    if (id >= config.vocab_size) {
      return FieldError(kFile, "bos_token_id", absl::StrCat("= ", id, " is not below vocab_size"));
    }
  }
  for (int id : config.eos_token_ids) {
    if (id >= config.vocab_size) {
      return FieldError(kFile, "eos_token_id", absl::StrCat("= ", id, " is not below vocab_size"));
    }
  }
  return config;
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& dir) {
  const std::string config_path = dir + "/config.json";
  absl::StatusOr<std::string> config_text = base::ReadFile(config_path);
  if (!config_text.ok()) {
    return absl::Status(config_text.status().code(),
                        absl::StrCat(config_path, ": ", config_text.status().message()));
  }
  const std::string generation_path = dir + "/generation_config.json";
  absl::StatusOr<std::string> generation_text = base::ReadFile(generation_path);
  if (!generation_text.ok() && !absl::IsNotFound(generation_text.status())) {
    return absl::Status(generation_text.status().code(),
                        absl::StrCat(generation_path, ": ", generation_text.status().message()));
  }
  absl::StatusOr<ModelConfig> config =
      ParseModelConfig(*config_text, generation_text.ok() ? *generation_text : "");
  if (!config.ok()) {
    return absl::Status(config.status().code(), absl::StrCat(dir, "/", config.status().message()));
  }
  if (config->name.empty()) {
    std::string trimmed = dir;
    while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
    config->name = trimmed.substr(trimmed.find_last_of('/') + 1);
  }
  return config;
}

std::string ModelConfigToJson(const ModelConfig& config) {
  Json root = Json::object();
  const ArchitectureInfo& info = Describe(config.architecture);
  root["architectures"] = {std::string(info.hf_classes[0])};
  root["model_type"] = std::string(info.name);
  if (!config.name.empty()) root["_name_or_path"] = config.name;
  root["hidden_size"] = config.hidden_size;
  root["intermediate_size"] = config.intermediate_size;
  root["num_hidden_layers"] = config.num_layers;
  root["num_attention_heads"] = config.num_heads;
  root["num_key_value_heads"] = config.num_kv_heads;
  root["head_dim"] = config.head_dim;
  root["vocab_size"] = config.vocab_size;
  root["max_position_embeddings"] = config.max_position_embeddings;
  root["rms_norm_eps"] = config.rms_norm_eps;
  root["rope_theta"] = config.rope_theta;
  switch (config.rope_scaling.type) {
    case RopeScaling::Type::kNone:
      root["rope_scaling"] = nullptr;
      break;
    case RopeScaling::Type::kLinear:
      root["rope_scaling"] = {{"rope_type", "linear"}, {"factor", config.rope_scaling.factor}};
      break;
    case RopeScaling::Type::kLlama3:
      root["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", config.rope_scaling.factor},
                              {"low_freq_factor", config.rope_scaling.low_freq_factor},
                              {"high_freq_factor", config.rope_scaling.high_freq_factor},
                              {"original_max_position_embeddings",
                               config.rope_scaling.original_max_position_embeddings}};
      break;
  }
  root["tie_word_embeddings"] = config.tie_word_embeddings;
  root["hidden_act"] = "silu";
  if (info.sliding_window_switch) {
    // As such configs (Qwen2.5's) say it: a window size is present, and switched off.
    root["use_sliding_window"] = false;
    root["sliding_window"] = config.max_position_embeddings;
    root["max_window_layers"] = config.num_layers;
  } else {
    root["attention_bias"] = false;
    root["mlp_bias"] = false;
  }
  if (config.bos_token_id >= 0) root["bos_token_id"] = config.bos_token_id;
  root["eos_token_id"] = config.eos_token_ids;
  if (!config.torch_dtype.empty()) root["torch_dtype"] = config.torch_dtype;
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string GenerationConfigToJson(const ModelConfig& config) {
  Json root = Json::object();
  if (config.bos_token_id >= 0) root["bos_token_id"] = config.bos_token_id;
  root["eos_token_id"] = config.eos_token_ids;
  root["do_sample"] = true;
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace arbor::model
