// libFuzzer target: arbitrary bytes as a whole GGUF file, then as a Llama model. Whatever the
// input, parsing returns a status, and every tensor it accepts lies inside the input (touched to
// let ASan check); the llama mapping over an accepted file returns a status too.
#include <cstddef>
#include <cstdint>

#include "model/gguf.h"
#include "model/gguf_llama.h"
#include "tests/model/fuzz/touch_views.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<arbor::model::GgufFile>> file =
      arbor::model::GgufFile::Parse(bytes, "fuzz.gguf");
  if (!file.ok()) return 0;
  arbor::model::fuzzing::TouchViews((*file)->tensors(), bytes);
  (void)arbor::model::MapGgufLlama(**file);
  return 0;
}
