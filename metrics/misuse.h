// How the metrics library reacts to a caller bug (an invalid metric name, a family registered
// twice with different shapes, the wrong number of label values): it says what and aborts.
// Such bugs come from constants in the instrumented code, so they show on the first start of a
// process, never from what a client sends.
#ifndef ARBOR_METRICS_MISUSE_H_
#define ARBOR_METRICS_MISUSE_H_

#include "absl/strings/string_view.h"

namespace arbor::metrics::internal {

[[noreturn]] void Misuse(absl::string_view what);

}  // namespace arbor::metrics::internal

#endif  // ARBOR_METRICS_MISUSE_H_
