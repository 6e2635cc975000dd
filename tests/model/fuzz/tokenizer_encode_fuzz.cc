// libFuzzer target: arbitrary bytes as text to encode with a byte-level BPE trained on the
// built-in corpus. Byte-level BPE covers every byte, so Decode(Encode(text)) must give the text
// back exactly, and the streaming decoder must produce its valid-UTF-8 form.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/incremental_decoder.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/utf8.h"

namespace {

const arbor::model::Tokenizer& FuzzTokenizer() {
  static const arbor::model::Tokenizer* tokenizer = [] {
    auto json = arbor::model::TrainByteLevelBpe(arbor::model::BuiltinCorpus(),
                                                {2000, arbor::model::Llama3SpecialTokens()});
    if (!json.ok()) std::abort();
    auto loaded = arbor::model::Tokenizer::FromJson(*json);
    if (!loaded.ok()) std::abort();
    return loaded->release();
  }();
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const arbor::model::Tokenizer& tokenizer = FuzzTokenizer();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool parse_special = size > 0 && (data[0] & 1);
  const std::vector<int> ids = tokenizer.Encode(text, parse_special);
  if (tokenizer.Decode(ids) != text) std::abort();
  arbor::model::IncrementalDecoder decoder(tokenizer);
  std::string streamed;
  for (int id : ids) streamed += decoder.Push(id);
  streamed += decoder.Flush();
  if (streamed != arbor::model::ToValidUtf8(text)) std::abort();
  return 0;
}
