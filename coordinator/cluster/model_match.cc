#include "coordinator/cluster/model_match.h"

#include "absl/strings/str_cat.h"

namespace arbor::coordinator {

absl::Status CheckWorkerModel(const ServedModelIdentity& served, const std::string& address,
                              const arbor::v1::ModelInfo& worker) {
  if (served.fingerprint.empty() || worker.fingerprint() == served.fingerprint) {
    return absl::OkStatus();
  }
  const std::string worker_identity =
      worker.fingerprint().empty()
          ? "no model identity: an older arbor-worker, or one without a usable tokenizer"
          : worker.fingerprint();
  return absl::FailedPreconditionError(absl::StrCat(
      "worker at ", address, " serves model '", worker.name(), "' (", worker_identity,
      "), but this coordinator serves '", served.name, "' (", served.fingerprint,
      "); start the worker with the coordinator's --model, or point it at a coordinator "
      "serving its model"));
}

}  // namespace arbor::coordinator
