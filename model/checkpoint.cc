#include "model/checkpoint.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "model/config_json.h"
#include "model/gguf_llama.h"
#include "model/llama_tensors.h"
#include "model/model_path.h"
#include "nlohmann/json.hpp"

namespace arbor::model {
namespace {

constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

// The shard file of each tensor, from model.safetensors.index.json's weight_map.
absl::StatusOr<std::map<std::string, std::string>> ReadWeightMap(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  auto weight_map = root.find("weight_map");
  if (weight_map == root.end() || !weight_map->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": field 'weight_map' is missing"));
  }
  std::map<std::string, std::string> shards;
  for (auto it = weight_map->begin(); it != weight_map->end(); ++it) {
    if (!it.value().is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": weight_map['", it.key(), "'] is not a file name"));
    }
    const std::string file = it.value().get<std::string>();
    // Shards live beside the index; a path could read anything on the machine.
    if (file.empty() || absl::StrContains(file, "/") || file == "." || file == "..") {
      return absl::InvalidArgumentError(absl::StrCat(path, ": weight_map['", it.key(), "'] = '",
                                                     file, "' is not a file in the directory"));
    }
    shards[it.key()] = file;
  }
  return shards;
}

// Rotary inverse frequencies that old Llama 2 exports carry: Arbor recomputes them from config.
bool IsIgnorable(const std::string& name) { return absl::EndsWith(name, "rotary_emb.inv_freq"); }

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// True when none of `count` 2-byte values `stride` bytes apart (from `bytes`) has an all-ones
// exponent under `mask` (NaN or infinity).
bool HalvesFinite(const char* bytes, size_t count, size_t stride, uint16_t mask) {
  uint16_t seen = 0;  // OR of the masked exponents that are all ones; branch-free inner loop.
  for (size_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes + stride * i, 2);
    seen |= static_cast<uint16_t>((bits & mask) == mask);
  }
  return seen == 0;
}

// Scans `tensor` for NaN or infinity: a checkpoint holding one would poison every logit. A block
// of a quantized type is finite exactly when its f16 scales (and minimums) are.
bool AllFinite(const TensorView& tensor) {
  const char* bytes = static_cast<const char*>(tensor.data);
  const DTypeLayout layout = Layout(tensor.dtype);
  const size_t blocks = tensor.nbytes / layout.block_bytes;
  if (tensor.dtype == DType::kF32) {
    for (size_t i = 0; i < blocks; ++i) {
      uint32_t bits;
      std::memcpy(&bits, bytes + 4 * i, 4);
      if ((bits & 0x7f800000u) == 0x7f800000u) return false;
    }
    return true;
  }
  const uint16_t mask = tensor.dtype == DType::kBF16 ? 0x7f80u : 0x7c00u;
  for (int offset : HalfFieldOffsets(tensor.dtype)) {
    if (!HalvesFinite(bytes + offset, blocks, layout.block_bytes, mask)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& path,
                                                             ProgressCallback progress) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint());
  checkpoint->path_ = path;
  TensorSources found;
  ASSIGN_OR_RETURN(const bool directory, IsModelDirectory(path));
  if (directory) {
    ASSIGN_OR_RETURN(checkpoint->config_, LoadModelConfig(path));
    RETURN_IF_ERROR(checkpoint->OpenSafetensors(found));
  } else {
    RETURN_IF_ERROR(checkpoint->OpenGguf(found));
  }
  RETURN_IF_ERROR(checkpoint->Adopt(found));
  RETURN_IF_ERROR(checkpoint->CheckFinite(progress));
  return checkpoint;
}

absl::Status Checkpoint::OpenSafetensors(TensorSources& found) {
  const std::string& dir = path_;
  auto add_file = [&](const std::string& path) -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::Open(path));
    for (const TensorView& tensor : file->tensors()) {
      auto [it, inserted] = found.emplace(tensor.name, std::make_pair(tensor, path));
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": tensor '", tensor.name, "' is also in ", it->second.second));
      }
    }
    files_.push_back(std::move(file));
    return absl::OkStatus();
  };
  const std::string index_path = dir + "/" + kIndexFile;
  if (Exists(index_path)) {
    ASSIGN_OR_RETURN(auto weight_map, ReadWeightMap(index_path));
    std::map<std::string, bool> opened;
    for (const auto& [name, file] : weight_map) {
      if (!opened[file]) {
        RETURN_IF_ERROR(add_file(dir + "/" + file));
        opened[file] = true;
      }
      auto it = found.find(name);
      if (it == found.end() || it->second.second != dir + "/" + file) {
        return absl::InvalidArgumentError(absl::StrCat(
            index_path, ": tensor '", name, "' is mapped to ", file, ", which does not hold it"));
      }
    }
    return absl::OkStatus();
  }
  if (Exists(dir + "/" + kSingleFile)) return add_file(dir + "/" + kSingleFile);
  return absl::NotFoundError(
      absl::StrCat(dir, ": neither ", kSingleFile, " nor ", kIndexFile,
                   " is here (only safetensors checkpoints are supported, not pytorch_model.bin)"));
}

absl::Status Checkpoint::OpenGguf(TensorSources& found) {
  ASSIGN_OR_RETURN(gguf_, GgufFile::Open(path_));
  ASSIGN_OR_RETURN(GgufLlama model, MapGgufLlama(*gguf_));
  config_ = std::move(model.config);
  if (config_.name.empty()) config_.name = std::filesystem::path(path_).stem().string();
  owned_ = std::move(model.owned);
  for (auto& [name, view] : model.tensors) found.emplace(name, std::make_pair(view, path_));
  return absl::OkStatus();
}

absl::Status Checkpoint::Adopt(TensorSources& found) {
  const ModelConfig& config = config_;
  const char* implied_by = gguf_ ? "the GGUF metadata implies" : "config.json implies";
  for (const TensorSpec& spec : LlamaTensorSpecs(config, DType::kF32)) {
    auto it = found.find(spec.name);
    if (it == found.end()) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor '", spec.name,
                                                     "' is missing (expected shape ",
                                                     ShapeString(spec.shape), ")"));
    }
    const TensorView& tensor = it->second.first;
    if (tensor.shape != spec.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          it->second.second, ": tensor '", spec.name, "' has shape ", ShapeString(tensor.shape),
          " but ", implied_by, " ", ShapeString(spec.shape)));
    }
    tensors_.emplace(spec.name, tensor);
    found.erase(it);
  }
  for (const auto& [name, entry] : found) {
    // Tied checkpoints sometimes still store lm_head: harmless when it has the right shape.
    if (IsIgnorable(name) ||
        (name == kLmHeadName && config.tie_word_embeddings &&
         entry.first.shape == std::vector<int64_t>{config.vocab_size, config.hidden_size})) {
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(entry.second, ": tensor '", name, "' is not part of a ",
                     model::Describe(config.architecture).family, " model with ",
                     gguf_ ? "this metadata" : "this config.json", " (unsupported architecture?)"));
  }
  uint64_t total = 0;
  for (const auto& [name, tensor] : tensors_) total += tensor.nbytes;
  weight_bytes_ = total;
  return absl::OkStatus();
}

absl::Status Checkpoint::CheckFinite(const ProgressCallback& progress) const {
  uint64_t checked = 0;
  if (progress) progress(0, weight_bytes_);
  for (const auto& [name, tensor] : tensors_) {
    if (!AllFinite(tensor)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": tensor '", name, "' holds NaN or infinite values"));
    }
    checked += tensor.nbytes;
    if (progress) progress(checked, weight_bytes_);
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorView> Checkpoint::Tensor(absl::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor '", name, "'"));
  }
  return it->second;
}

const TensorView& Checkpoint::LmHead() const {
  return tensors_.at(config_.tie_word_embeddings ? kEmbedTokensName : kLmHeadName);
}

std::string Checkpoint::Describe() const {
  const ModelConfig& c = config_;
  std::map<std::string, int> types;
  for (const auto& [name, tensor] : tensors_) ++types[DTypeName(tensor.dtype)];
  std::string type_counts;
  for (const auto& [type, count] : types) {
    absl::StrAppend(&type_counts, type_counts.empty() ? "" : ", ", type, " ×", count);
  }
  return absl::StrCat(model::Describe(c.architecture).name, " '", c.name, "': ", c.num_layers,
                      " layers, ", c.num_heads, " query / ", c.num_kv_heads, " KV heads × ",
                      c.head_dim, ", hidden ", c.hidden_size, ", context ",
                      c.max_position_embeddings, ", vocab ", c.vocab_size,
                      c.tie_word_embeddings ? ", tied embeddings" : "", "; tensors ", type_counts);
}

std::vector<std::string> Checkpoint::TensorNames() const {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors_) names.push_back(name);
  return names;
}

}  // namespace arbor::model
