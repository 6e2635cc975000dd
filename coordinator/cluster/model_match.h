// Whether a worker serves the coordinator's model. Token ids mean nothing across tokenizers, and
// a worker of another vocabulary fails every request whose prompt holds an id beyond its own, so
// a worker whose ModelInfo.fingerprint (model/model_identity.h) differs from the coordinator's
// never takes a job: RegisterWorker refuses it and a static one stays not ready, both saying why.
#ifndef ARBOR_COORDINATOR_CLUSTER_MODEL_MATCH_H_
#define ARBOR_COORDINATOR_CLUSTER_MODEL_MATCH_H_

#include <string>

#include "absl/status/status.h"
#include "arbor/v1/worker.pb.h"

namespace arbor::coordinator {

// The coordinator's model: its name (for messages) and fingerprint. An empty fingerprint (a
// coordinator without --model) accepts any worker.
struct ServedModelIdentity {
  std::string name;
  std::string fingerprint;
};

// OK when `worker` (the model the worker at `address` reports) is `served`; FAILED_PRECONDITION
// naming both models and how to fix it otherwise.
absl::Status CheckWorkerModel(const ServedModelIdentity& served, const std::string& address,
                              const arbor::v1::ModelInfo& worker);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_MODEL_MATCH_H_
