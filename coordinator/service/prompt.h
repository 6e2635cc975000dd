// The text side of the model for the coordinator: turns a checked request's prompt (text, chat
// messages or token ids) into token ids, and generated token ids back into text, with the
// tokenizer.json and chat template of the model directory (docs/ARCHITECTURE.md §1 step 2). Workers
// hold the weights; the coordinator needs only this.
//
// Without a model directory the coordinator still serves token prompts; text and chat prompts
// then fail with FAILED_PRECONDITION saying how to enable them, and events carry no text.
#ifndef ARBOR_COORDINATOR_SERVICE_PROMPT_H_
#define ARBOR_COORDINATOR_SERVICE_PROMPT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "coordinator/service/request_validation.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/gguf_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace arbor::coordinator {

class PromptCodec {
 public:
  // Token prompts only, no text.
  PromptCodec() = default;
  // The tokenizer of the model at `model_path` (a directory's tokenizer.json or a GGUF file's
  // metadata; required) and its chat template (optional: without one, chat prompts fail saying
  // why). See model::LoadModelTokenizer.
  // `chat_template_name` (--chat_template: llama3, chatml, mistral) forces the chat format
  // whatever the file carries; empty recognises it from the file.
  static absl::StatusOr<std::unique_ptr<PromptCodec>> Load(const std::string& model_path,
                                                           const std::string& chat_template_name);
  // For tests: a tokenizer already loaded, and optionally a chat template.
  PromptCodec(std::unique_ptr<model::Tokenizer> tokenizer,
              std::optional<model::ChatTemplate> chat_template);

  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  bool has_chat_template() const { return chat_template_.has_value(); }
  // How the chat template shows tools (kNone without a template).
  model::ToolFormat tool_format() const {
    return chat_template_ ? model::ToolFormatOf(*chat_template_) : model::ToolFormat::kNone;
  }
  // For the start-up log: the format (and default system message), or why there is none.
  std::string chat_template_description() const;

  // The prompt's token ids: token prompts as given; text prompts with the tokenizer's prefix
  // (BOS) before the encoded text; chat prompts rendered by the chat template.
  absl::StatusOr<std::vector<int32_t>> Encode(const CheckedRequest& request) const;

  // Text appended to a prompt (a scored continuation): encoded on its own, without the
  // tokenizer's prefix. FAILED_PRECONDITION naming `field` without a tokenizer.
  absl::StatusOr<std::vector<int32_t>> EncodeContinuation(const std::string& text,
                                                          const std::string& field) const;

  // Text of generated ids, valid UTF-8 that never ends inside a character: the bytes of an
  // unfinished last character are held back (a later token may complete them). Empty without
  // a tokenizer.
  std::string Decode(absl::Span<const int32_t> ids) const;
  // One token's bytes (may be a partial character; tree export sanitises). Empty without one.
  std::string TokenText(int32_t id) const;

  // The default thinking tokens of INSERT: the encoding of " ..." (docs/ARCHITECTURE.md §4.2);
  // nullopt without a tokenizer.
  std::optional<std::vector<int32_t>> ThinkingTokens() const;

 private:
  std::unique_ptr<model::Tokenizer> tokenizer_;
  std::optional<model::ChatTemplate> chat_template_;
  std::string chat_template_error_;  // Why chat prompts are unavailable, when they are.
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_PROMPT_H_
