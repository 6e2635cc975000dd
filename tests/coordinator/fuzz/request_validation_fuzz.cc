// The coordinator's request validation on Generation requests built from fuzzer bytes (parsed as
// GenerateRequest, ListJobsRequest and GetTreeRequest): every input is either accepted into
// checked values that respect their documented ranges, or refused with INVALID_ARGUMENT naming
// a field — never a crash, a hang or another code.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "arbor/v1/generation.pb.h"
#include "coordinator/service/request_validation.h"

namespace {

void Check(const absl::Status& status) {
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) abort();
  if (!status.ok() && status.message().find(':') == absl::string_view::npos) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace arbor::coordinator;
  arbor::v1::ModelInfo model;
  model.set_vocab_size(1000);
  model.set_max_context(2048);
  model.add_eos_token_ids(2);
  ServerLimits limits;
  limits.max_prompt_bytes = 4096;
  arbor::entropix::PolicyConfig defaults;
  defaults.insert.tokens = {7};

  arbor::v1::GenerateRequest request;
  if (request.ParseFromArray(data, static_cast<int>(size))) {
    absl::StatusOr<CheckedRequest> checked =
        ValidateGenerateRequest(request, model, limits, defaults);
    Check(checked.status());
    if (checked.ok()) {
      for (int32_t id : checked->prompt_token_ids) {
        if (id < 0 || id >= model.vocab_size()) abort();
      }
      if (checked->prompt_kind == PromptKind::kText &&
          (checked->text.empty() || !IsValidUtf8(checked->text) ||
           static_cast<int64_t>(checked->text.size()) > limits.max_prompt_bytes)) {
        abort();
      }
      for (int64_t prompt_tokens : {int64_t{1}, int64_t{100}, int64_t{2047}, int64_t{5000}}) {
        absl::StatusOr<int32_t> max_tokens =
            ResolveMaxTokens(*checked, prompt_tokens, model, limits);
        Check(max_tokens.status());
        if (max_tokens.ok() && (*max_tokens < 1 || prompt_tokens + *max_tokens > 2048)) abort();
      }
    }
  }
  arbor::v1::ListJobsRequest list;
  if (list.ParseFromArray(data, static_cast<int>(size))) Check(ValidateListJobsRequest(list));
  arbor::v1::GetTreeRequest tree;
  if (tree.ParseFromArray(data, static_cast<int>(size))) Check(ValidateGetTreeRequest(tree));
  return 0;
}
