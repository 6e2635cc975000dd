// Memory sizes as people write them on a command line — "512MiB", "2GB", "1.5g", "1048576", or
// "40%" of what the machine has available — and the machine's available memory (MemAvailable
// of /proc/meminfo: what can be allocated without swapping).
#ifndef ARBOR_BASE_MEMORY_SIZE_H_
#define ARBOR_BASE_MEMORY_SIZE_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arbor::base {

// Bytes of `text`: a number with an optional unit (k, M, G, T: powers of 1,000; Ki, Mi, Gi, Ti:
// powers of 1,024; either with an optional trailing B, any case) or a percentage in (0, 100] of
// `available` bytes. INVALID_ARGUMENT saying what is accepted for anything else, or for sizes
// of zero bytes or beyond 2^62.
absl::StatusOr<int64_t> ParseMemorySize(absl::string_view text, int64_t available);

// MemAvailable of /proc/meminfo in bytes; nothing where the file is missing or has no such line.
std::optional<int64_t> AvailableMemoryBytes();

}  // namespace arbor::base

#endif  // ARBOR_BASE_MEMORY_SIZE_H_
