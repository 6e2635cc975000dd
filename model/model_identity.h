// What makes two checkpoints the same model to a cluster: its architecture, shape and vocabulary
// size, and a hash of its tokenizer's tokens, as one printable fingerprint. The coordinator
// computes it for its --model, each worker for the model it serves (WorkerInfo.model), and a
// worker whose fingerprint differs is refused: token ids mean nothing across tokenizers. The
// same fingerprint tells the coordinator which known model (model_policies.h) a file or
// directory holds, whatever its name. It reads only the config and the tokenizer, never the
// weights, so a checkpoint of the same model in another format or dtype (GGUF Q4_1, safetensors
// f32) has the same fingerprint; a fine-tune that keeps the base model's shape and tokenizer does
// too.
#ifndef ARBOR_MODEL_MODEL_IDENTITY_H_
#define ARBOR_MODEL_MODEL_IDENTITY_H_

#include <string>

#include "absl/status/statusor.h"
#include "model/config.h"
#include "model/tokenizer/tokenizer.h"

namespace arbor::model {

struct ModelIdentity {
  std::string name;  // The config's name (or the file's stem), for messages; not compared.
  // E.g. "llama L30 h576 i1536 q9 kv3 d64 vocab 49152 tokens 49152:1b2c3d4e5f607182".
  std::string fingerprint;
};

// The fingerprint of a loaded model: `config`'s architecture and shape, and every token of
// `tokenizer` (its bytes and whether it is special).
std::string ModelFingerprint(const ModelConfig& config, const Tokenizer& tokenizer);

// The identity of the checkpoint at `path` (a Hugging Face directory or a GGUF file), from its
// config and tokenizer. Errors name the file, as Checkpoint::Open and LoadModelTokenizer do.
absl::StatusOr<ModelIdentity> ReadModelIdentity(const std::string& path);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_MODEL_IDENTITY_H_
