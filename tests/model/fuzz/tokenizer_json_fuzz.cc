// libFuzzer target: arbitrary bytes as tokenizer.json. Loading must return a status, never
// crash; a tokenizer that loads must encode and decode its own input without crashing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto tokenizer = arbor::model::Tokenizer::FromJson(text);
  if (tokenizer.ok()) {
    const std::vector<int> ids = (*tokenizer)->Encode(text.substr(0, 256));
    (*tokenizer)->Decode(ids);
  }
  return 0;
}
