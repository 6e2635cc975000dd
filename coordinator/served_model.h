// The model a coordinator serves (--model) and the default policy that follows from it. The
// known model it is, by name or by identity (model/model_policies.h), brings the policy evaluation
// chose for it and its fitted thresholds, so a bare coordinator, `arbor up` and the deploy/
// files answer alike; the operator's --policy and --policy_file replace each part. Workers must
// serve the same model: its identity goes to the worker pool, which refuses others.
#ifndef ARBOR_COORDINATOR_SERVED_MODEL_H_
#define ARBOR_COORDINATOR_SERVED_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "entropix/policy_config.h"
#include "model/model_identity.h"
#include "model/model_policies.h"

namespace arbor::coordinator {

struct ServedModel {
  std::string path;               // Empty without --model.
  model::ModelIdentity identity;  // Empty fingerprint without --model: any worker's model.
  model::ServedKnownModel known;  // Which known model it is, and why.
};

// `model_flag` (--model: a known name, `tiny`, a GGUF file or a model directory) resolved, its
// identity read. Errors name --model.
absl::StatusOr<ServedModel> ResolveServedModel(const std::string& model_flag);

// The server's default policy and, for the start-up log, where it came from. The policy by name:
// `policy_name` (--policy), else the known model's. Then the fields of a policy file:
// `policy_file` (--policy_file), else the known model's fitted one. Without either, the built-in
// default (entropix search).
struct DefaultPolicy {
  entropix::PolicyConfig policy;
  std::string description;
};
absl::StatusOr<DefaultPolicy> ChooseDefaultPolicy(const ServedModel& served,
                                                  const std::string& policy_name,
                                                  const std::string& policy_file);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVED_MODEL_H_
