// libFuzzer target: arbitrary text as config.json, and the same bytes split in two as config.json
// + generation_config.json. Parsing must return a status, and an accepted config must be
// self-consistent and survive a round trip through ModelConfigToJson.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "model/config_json.h"

namespace {

void Check(absl::string_view config_json, absl::string_view generation_json) {
  absl::StatusOr<arbor::model::ModelConfig> config =
      arbor::model::ParseModelConfig(config_json, generation_json);
  if (!config.ok()) return;
  if (config->hidden_size <= 0 || config->num_kv_heads <= 0 ||
      config->num_heads % config->num_kv_heads != 0 || config->head_dim % 2 != 0) {
    abort();
  }
  absl::StatusOr<arbor::model::ModelConfig> again =
      arbor::model::ParseModelConfig(arbor::model::ModelConfigToJson(*config));
  if (!again.ok() || again->hidden_size != config->hidden_size ||
      again->eos_token_ids != config->eos_token_ids) {
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  Check(text, "");
  const size_t split = text.find('\0');
  if (split != absl::string_view::npos) Check(text.substr(0, split), text.substr(split + 1));
  return 0;
}
