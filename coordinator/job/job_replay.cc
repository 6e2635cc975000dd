// The request that runs a job again (Job.request; `arbor replay`), rebuilt from the job's spec.
#include "base/status_macros.h"
#include "coordinator/job/job.h"
#include "policy/policy_convert.h"

namespace arbor::coordinator {

arbor::v1::GenerateRequest Job::ReplayRequest() const {
  arbor::v1::GenerateRequest r;
  r.mutable_tokens()->mutable_token_ids()->Add(spec_.prompt_token_ids.begin(),
                                               spec_.prompt_token_ids.end());
  r.set_max_tokens(spec_.max_tokens);
  r.set_seed(spec_.seed);
  *r.mutable_policy() = policy::PolicyToProto(spec_.policy);
  r.mutable_stop()->mutable_stop_token_ids()->Add(spec_.stop_token_ids.begin(),
                                                  spec_.stop_token_ids.end());
  for (const std::string& s : spec_.stop_strings) r.mutable_stop()->add_stop_strings(s);
  r.mutable_stop()->set_ignore_eos(spec_.ignore_eos);
  r.set_top_logprobs(spec_.top_logprobs);
  *r.mutable_processors() = spec_.processors;
  if (spec_.constraint.kind_case() != arbor::v1::OutputConstraint::KIND_NOT_SET) {
    *r.mutable_constraint() = spec_.constraint;
  }
  return r;
}

absl::StatusOr<arbor::v1::GenerateRequest> Job::ReplayRequest(
    const arbor::v1::PolicyConfig& change) const {
  arbor::v1::GenerateRequest r = ReplayRequest();
  ASSIGN_OR_RETURN(*r.mutable_policy(), policy::ChangedPolicy(spec_.policy, change));
  return r;
}

}  // namespace arbor::coordinator
