#include "coordinator/flags/served_model_flags.h"

#include "absl/flags/flag.h"
#include "base/flags.h"

ABSL_FLAG(std::string, policy, "",
          "The coordinator's default policy by name: greedy, sample, cot_decoding, eager, "
          "deepconf (CoT-decoding, entropy-gated branching and confidence-filtered voting over "
          "traces, docs/SEARCH_QUALITY.md), search, canonical or trace; empty: the policy "
          "evaluation chose for a known --model (cot_decoding with its fitted thresholds for "
          "smollm2-135m-instruct, by name or by a file of the same identity), else entropix "
          "search with the published thresholds. Requests may override any field.");
ABSL_FLAG(std::string, chat_template, "",
          "The chat format of chat prompts, whatever --model's file carries: llama3, chatml or "
          "mistral. Default: recognised from the file's template (tokenizer_config.json's or the "
          "GGUF's); when it is not recognised, chat prompts are refused (say which format the "
          "model was trained with here) while text and token prompts still work.");
ABSL_FLAG(std::string, served_model_name, "",
          "The model id of the HTTP API (/v1/models, the `model` field; requests may also name "
          "the model file). Default: the known model's name when --model is one (under `arbor "
          "up`: the name given to its --model, smollm2-135m-instruct when none), else the last "
          "path component of --model.");

namespace arbor::coordinator {
namespace {

// The flag as an argument, or nothing for an empty value.
void AddArg(const absl::Flag<std::string>& flag, const std::string& value,
            std::vector<std::string>& args) {
  if (!value.empty()) args.push_back(base::FlagArg(flag, value));
}

}  // namespace

ServedModelFlags ServedModelFlagsFromFlags() {
  ServedModelFlags flags;
  flags.policy = absl::GetFlag(FLAGS_policy);
  flags.chat_template = absl::GetFlag(FLAGS_chat_template);
  flags.served_model_name = absl::GetFlag(FLAGS_served_model_name);
  return flags;
}

std::vector<std::string> ServedModelArgs(const ServedModelFlags& flags) {
  std::vector<std::string> args;
  AddArg(FLAGS_policy, flags.policy, args);
  AddArg(FLAGS_chat_template, flags.chat_template, args);
  AddArg(FLAGS_served_model_name, flags.served_model_name, args);
  return args;
}

}  // namespace arbor::coordinator
