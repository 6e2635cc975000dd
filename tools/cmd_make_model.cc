// `arbor make-model --preset P --out DIR [--seed N] [--gain G] [--dtype f32|bf16]`: writes a
// synthetic Llama checkpoint directory (see model/make_model.h) and prints its shape.
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "model/make_model.h"
#include "tools/commands.h"

ABSL_FLAG(std::string, preset, "tiny", "make-model: tiny, small, llama-3.2-1b-shape or qwen2-tiny");
ABSL_FLAG(std::string, out, "", "make-model: output directory (created if absent)");
ABSL_FLAG(uint64_t, seed, 0,
          "Random seed: make-model's weights; generate/submit's sampler (0: the server picks "
          "one, reported with the job); eval/calibrate's task draws (0 counts as 1).");
ABSL_FLAG(double, gain, 1.0,
          "make-model: logit scale (final norm weight); 0 = uniform, larger = more confident");
ABSL_FLAG(std::string, dtype, "",
          "make-model: f32 or bf16 (default: f32 for tiny/small, bf16 for llama-3.2-1b-shape)");

namespace arbor::tools {

int RunMakeModel(const Args& args) {
  if (!args.empty()) {
    fprintf(stderr,
            "usage: arbor make-model --preset %s --out DIR [--seed N] [--gain G] "
            "[--dtype f32|bf16]\n",
            absl::StrJoin(model::MakeModelPresets(), "|").c_str());
    return 2;
  }
  model::MakeModelOptions options;
  options.preset = absl::GetFlag(FLAGS_preset);
  options.out_dir = absl::GetFlag(FLAGS_out);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.gain = static_cast<float>(absl::GetFlag(FLAGS_gain));
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  if (dtype == "f32") {
    options.dtype = model::DType::kF32;
  } else if (dtype == "bf16") {
    options.dtype = model::DType::kBF16;
  } else if (!dtype.empty()) {
    fprintf(stderr, "make-model: --dtype '%s' is not f32 or bf16\n", dtype.c_str());
    return 2;
  }
  // Progress on stderr, at most once per percent, for the multi-gigabyte preset.
  int last_percent = -1;
  options.progress = [&last_percent](uint64_t written, uint64_t total) {
    const int percent = total == 0 ? 100 : static_cast<int>(100 * written / total);
    if (total < (64u << 20) || percent == last_percent) return;
    last_percent = percent;
    fprintf(stderr, "\rmake-model: writing weights %3d%% (%.2f of %.2f GB)", percent, written / 1e9,
            total / 1e9);
    if (written == total) fprintf(stderr, "\n");
  };
  const absl::Time start = absl::Now();
  absl::StatusOr<model::ModelConfig> config = model::MakeModel(options);
  if (!config.ok()) {
    fprintf(stderr, "make-model: %s\n", config.status().ToString().c_str());
    return 1;
  }
  printf("%s: preset %s, %d layers, hidden %d, %d/%d heads x %d, ffn %d, vocab %d (%.1f s)\n",
         options.out_dir.c_str(), options.preset.c_str(), config->num_layers, config->hidden_size,
         config->num_heads, config->num_kv_heads, config->head_dim, config->intermediate_size,
         config->vocab_size, absl::ToDoubleSeconds(absl::Now() - start));
  return 0;
}

}  // namespace arbor::tools
