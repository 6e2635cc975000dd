// The KV cache column of `arbor workers`: what a worker holds in tokens and bytes, from its
// health report (blocks) and its registration (block size, bytes per token), so an operator
// reads capacity in the units --kv_tokens and --kv_memory take rather than in blocks.
#ifndef ARBOR_TOOLS_KV_USAGE_H_
#define ARBOR_TOOLS_KV_USAGE_H_

#include <cstdint>
#include <string>

#include "arbor/v1/cluster.pb.h"

namespace arbor::tools {

// `n` with thousands separators: 46656 -> "46,656".
std::string GroupedCount(int64_t n);
// `bytes` in binary units, three significant digits: "12.0 MiB", "544 MiB", "1.50 GiB".
std::string BinaryBytes(int64_t bytes);
// "1,024/46,656 tokens (12.0 MiB/544 MiB)": used and total KV of `worker`; without the bytes
// when the worker does not report its bytes per token.
std::string KvUsage(const arbor::v1::WorkerStatus& worker);

}  // namespace arbor::tools

#endif  // ARBOR_TOOLS_KV_USAGE_H_
