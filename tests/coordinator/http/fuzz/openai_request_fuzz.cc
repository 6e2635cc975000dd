// The HTTP gateway's request parser on arbitrary bodies, as both endpoints: it must answer every
// input with a request or an INVALID_ARGUMENT naming a field, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "coordinator/http/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  for (auto endpoint : {arbor::coordinator::http::Endpoint::kCompletions,
                        arbor::coordinator::http::Endpoint::kChatCompletions}) {
    absl::StatusOr<arbor::coordinator::http::OpenAiRequest> parsed =
        arbor::coordinator::http::ParseOpenAiRequest(body, endpoint);
    if (!parsed.ok() && parsed.status().code() != absl::StatusCode::kInvalidArgument) abort();
    if (parsed.ok() && parsed->choices.empty()) abort();  // Every request runs something.
  }
  return 0;
}
