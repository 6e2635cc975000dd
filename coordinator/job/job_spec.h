// The checked request a Job runs (job.h), resolved against the model: what every part of the
// job — its driver and its branch strategies — reads and none changes. It is checked once, at
// the edge (coordinator/service/request_validation.h); the job checks only that its parts agree.
#ifndef ARBOR_COORDINATOR_JOB_JOB_SPEC_H_
#define ARBOR_COORDINATOR_JOB_JOB_SPEC_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "arbor/v1/worker.pb.h"
#include "base/answer_pattern.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

struct JobSpec {
  std::string job_id;
  std::vector<int32_t> prompt_token_ids;  // Non-empty, each in [0, vocab_size).
  int32_t vocab_size = 0;
  int32_t max_context = 0;  // Tokens per sequence, prompt included.
  int32_t max_tokens = 0;   // >= 1; prompt + max_tokens <= max_context.
  uint64_t seed = 0;
  // Validated; insert.tokens resolved (non-empty unless INSERT is off: insert.max_per_job = 0).
  entropix::PolicyConfig policy;
  // TRACE: policy.trace.answer_pattern compiled (where the request was checked); null when the
  // pattern is empty.
  std::shared_ptr<const base::AnswerPattern> answer_pattern;
  std::vector<int32_t> eos_token_ids;  // The model's; ignored with ignore_eos.
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop_strings;
  int32_t top_logprobs = 0;  // Alternatives kept per node.
  absl::Time deadline = absl::InfiniteFuture();
  arbor::v1::LogitProcessors processors;  // Validated; on every decode step of every sequence.
  // Compiles; unset: none. With one, policy.insert.max_per_job is 0 (thinking text is no JSON).
  arbor::v1::OutputConstraint constraint;
  // Send the text of the search's traces as they run (ReasoningEvents, reasoning_stream.h).
  bool reasoning = true;

  // Whether `token` ends the job's sequences: the model's eos ids (unless ignore_eos) and the
  // request's stop ids.
  bool IsStopToken(int32_t token) const {
    const auto in = [token](const std::vector<int32_t>& ids) {
      return std::find(ids.begin(), ids.end(), token) != ids.end();
    };
    return in(stop_token_ids) || (!ignore_eos && in(eos_token_ids));
  }
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_SPEC_H_
