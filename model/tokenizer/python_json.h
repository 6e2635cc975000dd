// JSON text as the chat templates' `tojson` filter writes it: Python's json.dumps with
// ensure_ascii off, keys in their given order, ", " and ": " between items (",\n" and an
// indentation per level when indented). A tool's schema is shown to the model in exactly these
// bytes, as the model saw such schemas in training.
#ifndef ARBOR_MODEL_TOKENIZER_PYTHON_JSON_H_
#define ARBOR_MODEL_TOKENIZER_PYTHON_JSON_H_

#include <string>

#include "nlohmann/json.hpp"

namespace arbor::model {

// `indent` < 0: on one line (json.dumps(value)); otherwise json.dumps(value, indent=indent).
std::string PythonJsonDumps(const nlohmann::ordered_json& value, int indent = -1);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TOKENIZER_PYTHON_JSON_H_
