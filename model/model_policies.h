// The policies fitted to the known models (model/policies/, compiled in): the decision thresholds
// and sampling laws `arbor calibrate --fit_temperature` chose on the model's calibration tasks
// (docs/SEARCH_QUALITY.md). `arbor up` serves a known model with its file as the coordinator's
// --policy_file, so search and the canonical sampler run calibrated without any set-up.
#ifndef ARBOR_MODEL_MODEL_POLICIES_H_
#define ARBOR_MODEL_MODEL_POLICIES_H_

#include <string_view>

#include "model/model_store.h"

namespace arbor::model {

// The fitted policy of `model` as PolicyConfig JSON; empty when it has none.
std::string_view FittedPolicy(const KnownModel& model);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_MODEL_POLICIES_H_
