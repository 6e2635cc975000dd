#include "tools/default_model.h"

#include "model/model_store.h"
#include "model/tiny_model.h"

namespace arbor::tools {

absl::StatusOr<std::string> ResolveToolModel(const std::string& model) {
  return model::ResolveModelOrTiny(model.empty() ? model::kDefaultModelName : model);
}

}  // namespace arbor::tools
