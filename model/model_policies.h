// The policies fitted to the known models (model/policies/, compiled in): the decision thresholds
// and sampling laws `arbor calibrate --fit_temperature` chose on the model's calibration tasks
// (docs/SEARCH_QUALITY.md), and which known model a server serves. A coordinator serving a known
// model, by its name or by a file or directory of the same identity (model_identity.h), starts
// with that model's policy and this file as its default unless the operator gives --policy or
// --policy_file, however it was started (`arbor up`, a bare coordinator, deploy/).
#ifndef ARBOR_MODEL_MODEL_POLICIES_H_
#define ARBOR_MODEL_MODEL_POLICIES_H_

#include <string>
#include <string_view>

#include "model/model_identity.h"
#include "model/model_store.h"

namespace arbor::model {

// The fitted policy of `model` as PolicyConfig JSON; empty when it has none.
std::string_view FittedPolicy(const KnownModel& model);

// The known model a server's --model is, and why (for its start-up log).
struct ServedKnownModel {
  const KnownModel* known = nullptr;  // Null: none.
  std::string reason;
};

// `model_flag` as given to --model and `identity`, the identity of the checkpoint it resolved to:
// the known model the flag names, else the one whose fingerprint `identity` has.
ServedKnownModel FindServedKnownModel(const std::string& model_flag, const ModelIdentity& identity);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_MODEL_POLICIES_H_
