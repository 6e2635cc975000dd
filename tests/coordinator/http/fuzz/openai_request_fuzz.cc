// The HTTP gateway's request parsers on arbitrary bodies, as both OpenAI endpoints and as a
// replay's body: each must answer every input with a request or an INVALID_ARGUMENT naming a
// field, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "coordinator/http/json_body.h"
#include "coordinator/http/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  for (auto endpoint : {arbor::coordinator::http::Endpoint::kCompletions,
                        arbor::coordinator::http::Endpoint::kChatCompletions}) {
    absl::StatusOr<arbor::coordinator::http::OpenAiRequest> parsed =
        arbor::coordinator::http::ParseOpenAiRequest(body, endpoint, arbor::v1::PolicyConfig());
    if (!parsed.ok() && parsed.status().code() != absl::StatusCode::kInvalidArgument) abort();
    if (parsed.ok() && parsed->choices.empty()) abort();  // Every request runs something.
  }
  absl::StatusOr<arbor::v1::ReplayRequest> replay =
      arbor::coordinator::http::ParseReplayBody("j1", body);
  if (!replay.ok() && replay.status().code() != absl::StatusCode::kInvalidArgument) abort();
  if (replay.ok() && replay->job_id() != "j1") abort();
  return 0;
}
