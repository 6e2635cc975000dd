// The tokenizer and chat template stored in a GGUF file's metadata (tokenizer.ggml.* and
// tokenizer.chat_template), and the one entry point that loads them for any model Arbor serves:
// a Hugging Face directory or a GGUF file.
//
// A GGUF `gpt2` (byte-level BPE) vocabulary is rebuilt as the tokenizer.json it came from: the
// tokens and merges, control tokens as special added tokens, user-defined ones as plain added
// tokens, the pre-tokenizer named by tokenizer.ggml.pre (the regex sequence llama.cpp applies
// for that name), and BOS in front when add_bos_token says so. A SentencePiece `llama` vocabulary
// becomes the byte-fallback BPE of sentencepiece_gguf.h. So one BPE implementation serves every
// format.
#ifndef ARBOR_MODEL_TOKENIZER_GGUF_TOKENIZER_H_
#define ARBOR_MODEL_TOKENIZER_GGUF_TOKENIZER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/gguf.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"

namespace arbor::model {

// The pre-tokenizer names Arbor knows (llama.cpp's spelling): "default", "gpt2", "llama-bpe",
// "qwen2", "smollm" (and the names llama.cpp treats like them). Another name is a clear error.
absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const GgufFile& file);

// tokenizer.chat_template recognised (Llama 3, ChatML, Mistral); NOT_FOUND without one.
absl::StatusOr<ChatTemplate> ChatTemplateFromGguf(const GgufFile& file);

struct ModelTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  // The chat template, or why there is none (a request with raw text or tokens still works).
  absl::StatusOr<ChatTemplate> chat_template = absl::NotFoundError("no chat template");
};

// For a directory: DIR/tokenizer.json and DIR/tokenizer_config.json's chat_template. For a file:
// its GGUF metadata. Errors name the file. A non-empty `chat_template_name` (a --chat_template
// flag: "llama3" or "chatml", see ParseChatTemplateName) chooses the format whatever the file
// carries, keeping the default system message of a template it recognises; an unknown name is
// an error.
absl::StatusOr<ModelTokenizer> LoadModelTokenizer(const std::string& path,
                                                  absl::string_view chat_template_name = "");

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_GGUF_TOKENIZER_H_
