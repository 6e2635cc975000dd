// The worker's RunRequest validation on requests built from fuzzer bytes: every request is
// accepted or refused with INVALID_ARGUMENT naming the item's field — never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "arbor/v1/worker.pb.h"
#include "worker/engine/run_validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  arbor::v1::RunRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  arbor::worker::RunLimits limits;
  limits.vocab_size = 512;
  limits.max_context = 2048;
  const absl::Status status = arbor::worker::ValidateRunRequest(request, limits);
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) abort();
  if (!status.ok() && status.message().find(':') == absl::string_view::npos) abort();
  return 0;
}
