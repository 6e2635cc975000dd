// libFuzzer target: arbitrary bytes as a whole safetensors file. Whatever the input, parsing
// returns a status, and every view it accepts lies inside the input (touched to let ASan check).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<arbor::model::TensorView>> tensors =
      arbor::model::ParseSafetensors(bytes, "fuzz.safetensors");
  if (!tensors.ok()) return 0;
  for (const arbor::model::TensorView& tensor : *tensors) {
    const char* begin = static_cast<const char*>(tensor.data);
    if (begin < bytes.data() || begin + tensor.nbytes > bytes.data() + bytes.size()) abort();
    char sum = 0;
    for (size_t i = 0; i < tensor.nbytes; ++i) sum = static_cast<char>(sum ^ begin[i]);
    volatile char sink = sum;  // Keeps the reads.
    (void)sink;
  }
  return 0;
}
