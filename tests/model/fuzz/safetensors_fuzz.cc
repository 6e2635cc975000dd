// libFuzzer target: arbitrary bytes as a whole safetensors file. Whatever the input, parsing
// returns a status, and every view it accepts lies inside the input (touched to let ASan check).
#include <cstddef>
#include <cstdint>

#include "model/safetensors.h"
#include "tests/model/fuzz/touch_views.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<arbor::model::TensorView>> tensors =
      arbor::model::ParseSafetensors(bytes, "fuzz.safetensors");
  if (tensors.ok()) arbor::model::fuzzing::TouchViews(*tensors, bytes);
  return 0;
}
