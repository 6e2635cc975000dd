// For the file-format fuzz targets: aborts unless every tensor view a parser accepted lies inside
// the input, and reads each of its bytes so that AddressSanitizer checks them.
#ifndef ARBOR_TESTS_MODEL_FUZZ_TOUCH_VIEWS_H_
#define ARBOR_TESTS_MODEL_FUZZ_TOUCH_VIEWS_H_

#include <cstdlib>
#include <vector>

#include "absl/strings/string_view.h"
#include "model/tensor.h"

namespace arbor::model::fuzzing {

inline void TouchViews(const std::vector<TensorView>& tensors, absl::string_view input) {
  for (const TensorView& tensor : tensors) {
    const char* begin = static_cast<const char*>(tensor.data);
    if (begin < input.data() || begin + tensor.nbytes > input.data() + input.size()) abort();
    char sum = 0;
    for (size_t i = 0; i < tensor.nbytes; ++i) sum = static_cast<char>(sum ^ begin[i]);
    volatile char sink = sum;  // Keeps the reads.
    (void)sink;
  }
}

}  // namespace arbor::model::fuzzing

#endif  // ARBOR_TESTS_MODEL_FUZZ_TOUCH_VIEWS_H_
