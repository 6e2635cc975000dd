#include "model/model_identity.h"

#include <cstdint>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "model/config_json.h"
#include "model/gguf.h"
#include "model/gguf_llama.h"
#include "model/model_path.h"
#include "model/tokenizer/gguf_tokenizer.h"

namespace arbor::model {
namespace {

// 64-bit FNV-1a: stable across processes, builds and machines, unlike absl::Hash, since
// coordinator and workers compare the values they compute apart.
class Fnv1a {
 public:
  void Add(absl::string_view bytes) {
    for (const char c : bytes) {
      hash_ ^= static_cast<uint8_t>(c);
      hash_ *= 0x100000001b3ULL;
    }
  }
  // A length before each token, so ("ab", "c") and ("a", "bc") differ.
  void AddToken(absl::string_view bytes, bool special) {
    const uint64_t size = bytes.size();
    Add(absl::string_view(reinterpret_cast<const char*>(&size), sizeof(size)));
    Add(bytes);
    Add(special ? "s" : "n");
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

// The config as a checkpoint of `path` would load it, without touching the weights.
absl::StatusOr<ModelConfig> ReadConfig(const std::string& path) {
  ASSIGN_OR_RETURN(const bool directory, IsModelDirectory(path));
  if (directory) return LoadModelConfig(path);
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(path));
  ASSIGN_OR_RETURN(GgufLlama model, MapGgufLlama(*gguf));
  if (model.config.name.empty()) model.config.name = std::filesystem::path(path).stem().string();
  return std::move(model.config);
}

}  // namespace

std::string ModelFingerprint(const ModelConfig& config, const Tokenizer& tokenizer) {
  Fnv1a tokens;
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    tokens.AddToken(tokenizer.TokenBytes(id), tokenizer.IsSpecial(id));
  }
  return absl::StrFormat("%s L%d h%d i%d q%d kv%d d%d vocab %d tokens %d:%016x",
                         Describe(config.architecture).name, config.num_layers, config.hidden_size,
                         config.intermediate_size, config.num_heads, config.num_kv_heads,
                         config.head_dim, config.vocab_size, tokenizer.vocab_size(),
                         tokens.value());
}

absl::StatusOr<ModelIdentity> ReadModelIdentity(const std::string& path) {
  ASSIGN_OR_RETURN(const ModelConfig config, ReadConfig(path));
  ASSIGN_OR_RETURN(const ModelTokenizer tokenizer, LoadModelTokenizer(path));
  return ModelIdentity{config.name, ModelFingerprint(config, *tokenizer.tokenizer)};
}

}  // namespace arbor::model
