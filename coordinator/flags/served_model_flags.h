// What the coordinator's command line says about the model it serves beyond the model itself:
// the default policy by name (--policy), the chat format (--chat_template) and the HTTP API's
// model id (--served_model_name). Defined once, for arbor-coordinator and for `arbor up`, which
// hands them on to the coordinator it starts.
#ifndef ARBOR_COORDINATOR_FLAGS_SERVED_MODEL_FLAGS_H_
#define ARBOR_COORDINATOR_FLAGS_SERVED_MODEL_FLAGS_H_

#include <string>
#include <vector>

namespace arbor::coordinator {

struct ServedModelFlags {
  std::string policy;             // A policy's name (policy/policy_presets.h); empty: the model's.
  std::string chat_template;      // llama3, chatml or mistral; empty: recognised from the file.
  std::string served_model_name;  // The HTTP API's model id; empty: named after --model.
};

ServedModelFlags ServedModelFlagsFromFlags();

// The arguments that give a started coordinator `flags`: a flag for each field that is set.
std::vector<std::string> ServedModelArgs(const ServedModelFlags& flags);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_FLAGS_SERVED_MODEL_FLAGS_H_
