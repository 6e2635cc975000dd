#include "coordinator/served_model.h"

#include "absl/strings/str_cat.h"
#include "model/tiny_model.h"
#include "policy/policy_convert.h"
#include "policy/policy_file.h"
#include "policy/policy_presets.h"

namespace arbor::coordinator {
namespace {

absl::Status WithFlag(const char* flag, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(flag, ": ", status.message()));
}

// `base` with the named preset applied.
absl::StatusOr<entropix::PolicyConfig> ApplyNamedPolicy(const std::string& name,
                                                        const entropix::PolicyConfig& base) {
  absl::StatusOr<v1::PolicyConfig> named = policy::NamedPolicy(name);
  if (!named.ok()) return absl::InvalidArgumentError(named.status().message());
  return policy::PolicyFromProto(*named, base);
}

}  // namespace

absl::StatusOr<ServedModel> ResolveServedModel(const std::string& model_flag) {
  ServedModel served;
  if (model_flag.empty()) return served;
  absl::StatusOr<std::string> path = model::ResolveModelOrTiny(model_flag);
  if (!path.ok()) return WithFlag("--model", path.status());
  absl::StatusOr<model::ModelIdentity> identity = model::ReadModelIdentity(*path);
  if (!identity.ok()) return WithFlag("--model", identity.status());
  served.path = *std::move(path);
  served.identity = *std::move(identity);
  served.known = model::FindServedKnownModel(model_flag, served.identity);
  return served;
}

absl::StatusOr<DefaultPolicy> ChooseDefaultPolicy(const ServedModel& served,
                                                  const std::string& policy_name,
                                                  const std::string& policy_file) {
  const model::KnownModel* known = served.known.known;
  DefaultPolicy chosen;
  std::string name = policy_name;
  if (name.empty() && known != nullptr) name = known->policy;
  if (!name.empty()) {
    absl::StatusOr<entropix::PolicyConfig> policy = ApplyNamedPolicy(name, chosen.policy);
    if (!policy.ok()) return WithFlag("--policy", policy.status());
    chosen.policy = *std::move(policy);
    chosen.description = policy_name.empty()
                             ? absl::StrCat(name, " (", known->name, "'s, as evaluation chose)")
                             : absl::StrCat(name, " (--policy)");
  } else {
    chosen.description = "entropix search (the built-in default)";
  }
  if (!policy_file.empty()) {
    absl::StatusOr<entropix::PolicyConfig> policy =
        policy::ApplyPolicyFile(policy_file, chosen.policy);
    if (!policy.ok()) return WithFlag("--policy_file", policy.status());
    chosen.policy = *std::move(policy);
    absl::StrAppend(&chosen.description, " with ", policy_file, " (--policy_file)");
  } else if (known != nullptr && !model::FittedPolicy(*known).empty()) {
    const std::string_view fitted = model::FittedPolicy(*known);
    absl::StatusOr<entropix::PolicyConfig> policy = policy::ApplyPolicyJson(
        absl::string_view(fitted.data(), fitted.size()), known->policy_file, chosen.policy);
    if (!policy.ok()) return policy.status();  // Compiled in and tested: not the operator's.
    chosen.policy = *std::move(policy);
    absl::StrAppend(&chosen.description, " with ", known->name, "'s fitted thresholds");
  }
  if (!served.path.empty()) absl::StrAppend(&chosen.description, "; ", served.known.reason);
  return chosen;
}

}  // namespace arbor::coordinator
