#include "model/checkpoint.h"

#include <sys/stat.h>

#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/subprocess.h"
#include "model/config_json.h"
#include "model/llama_tensors.h"
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

// Scans `tensor` for NaN or infinity: a checkpoint holding one would poison every logit.
bool AllFinite(const TensorView& tensor) {
  const size_t count = tensor.nbytes / DTypeSize(tensor.dtype);
  if (tensor.dtype == DType::kF32) {
    const char* bytes = static_cast<const char*>(tensor.data);
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits;
      std::memcpy(&bits, bytes + 4 * i, 4);
      if ((bits & 0x7f800000u) == 0x7f800000u) return false;
    }
    return true;
  }
  const uint16_t exponent_mask = tensor.dtype == DType::kBF16 ? 0x7f80u : 0x7c00u;
  const char* bytes = static_cast<const char*>(tensor.data);
  uint16_t seen = 0;  // OR of the masked exponents that are all ones; branch-free inner loop.
  for (size_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes + 2 * i, 2);
    seen |= static_cast<uint16_t>((bits & exponent_mask) == exponent_mask);
  }
  return seen == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir,
                                                             ProgressCallback progress) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint());
  checkpoint->dir_ = dir;
  ASSIGN_OR_RETURN(checkpoint->config_, LoadModelConfig(dir));

  // Every tensor present, with the file it came from (for error messages).
  std::map<std::string, std::pair<TensorView, std::string>, std::less<>> found;
  auto add_file = [&](const std::string& path) -> absl::StatusOr<const SafetensorsFile*> {
    ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::Open(path));
    for (const TensorView& tensor : file->tensors()) {
      auto [it, inserted] = found.emplace(tensor.name, std::make_pair(tensor, path));
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": tensor '", tensor.name, "' is also in ", it->second.second));
      }
    }
    checkpoint->files_.push_back(std::move(file));
    return checkpoint->files_.back().get();
  };
  const std::string index_path = dir + "/" + kIndexFile;
  if (Exists(index_path)) {
    ASSIGN_OR_RETURN(auto weight_map, ReadWeightMap(index_path));
    std::map<std::string, bool> opened;
    for (const auto& [name, file] : weight_map) {
      if (!opened[file]) {
        RETURN_IF_ERROR(add_file(dir + "/" + file).status());
        opened[file] = true;
      }
      auto it = found.find(name);
      if (it == found.end() || it->second.second != dir + "/" + file) {
        return absl::InvalidArgumentError(absl::StrCat(
            index_path, ": tensor '", name, "' is mapped to ", file, ", which does not hold it"));
      }
    }
  } else if (Exists(dir + "/" + kSingleFile)) {
    RETURN_IF_ERROR(add_file(dir + "/" + kSingleFile).status());
  } else {
    return absl::NotFoundError(absl::StrCat(
        dir, ": neither ", kSingleFile, " nor ", kIndexFile,
        " is here (only safetensors checkpoints are supported, not pytorch_model.bin)"));
  }

  const ModelConfig& config = checkpoint->config_;
  for (const TensorSpec& spec : LlamaTensorSpecs(config, DType::kF32)) {
    auto it = found.find(spec.name);
    if (it == found.end()) {
      return absl::InvalidArgumentError(absl::StrCat(dir, ": tensor '", spec.name,
                                                     "' is missing (expected shape ",
                                                     ShapeString(spec.shape), ")"));
    }
    const TensorView& tensor = it->second.first;
    if (tensor.shape != spec.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          it->second.second, ": tensor '", spec.name, "' has shape ", ShapeString(tensor.shape),
          " but config.json implies ", ShapeString(spec.shape)));
    }
    checkpoint->tensors_.emplace(spec.name, tensor);
    found.erase(it);
  }
  for (const auto& [name, entry] : found) {
    // Tied checkpoints sometimes still store lm_head: harmless when it has the right shape.
    if (IsIgnorable(name) ||
        (name == "lm_head.weight" && config.tie_word_embeddings &&
         entry.first.shape == std::vector<int64_t>{config.vocab_size, config.hidden_size})) {
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        entry.second, ": tensor '", name,
        "' is not part of a Llama model with this config.json (unsupported architecture?)"));
  }

  uint64_t total = 0;
  for (const auto& [name, tensor] : checkpoint->tensors_) total += tensor.nbytes;
  checkpoint->weight_bytes_ = total;
  uint64_t checked = 0;
  if (progress) progress(0, total);
  for (const auto& [name, tensor] : checkpoint->tensors_) {
    if (!AllFinite(tensor)) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, ": tensor '", name, "' holds NaN or infinite values"));
    }
    checked += tensor.nbytes;
    if (progress) progress(checked, total);
  }
  return checkpoint;
}

absl::StatusOr<TensorView> Checkpoint::Tensor(absl::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    return absl::NotFoundError(absl::StrCat(dir_, ": no tensor '", name, "'"));
  }
  return it->second;
}

const TensorView& Checkpoint::LmHead() const {
  return tensors_.at(config_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
}

std::vector<std::string> Checkpoint::TensorNames() const {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors_) names.push_back(name);
  return names;
}

}  // namespace arbor::model
