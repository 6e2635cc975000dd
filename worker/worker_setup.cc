#include "worker/worker_setup.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/checkpoint.h"
#include "model/tokenizer/tokenizer.h"
#include "worker/cpu_backend.h"

namespace arbor::worker {
namespace {

constexpr char kVersion[] = "0.1.0";
constexpr int32_t kMaxTopK = 256;

// The policy's default thinking token: the model's own " ..." (Llama 3: id 2564). Without a
// tokenizer there is none, so INSERT is disabled rather than guessed.
entropix::PolicyConfig DefaultPolicy(const std::string& model_dir) {
  entropix::PolicyConfig policy;
  absl::StatusOr<std::unique_ptr<model::Tokenizer>> tokenizer =
      model::Tokenizer::FromFile(model_dir + "/tokenizer.json");
  if (!tokenizer.ok()) {
    spdlog::warn("no usable tokenizer.json ({}); INSERT is disabled by default",
                 tokenizer.status().ToString());
    policy.insert.max_per_job = 0;
    return policy;
  }
  for (int id : (*tokenizer)->Encode(" ...", /*parse_special=*/false)) {
    policy.insert.tokens.push_back(id);
  }
  return policy;
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(
    const WorkerSetupOptions& options, std::shared_ptr<const model::Checkpoint> checkpoint) {
  if (options.device != "cpu") {
    return absl::UnimplementedError(absl::StrCat(
        "--device=", options.device,
        ": only the cpu backend is available in this build; use --device=cpu"));
  }
  CpuBackendOptions cpu;
  cpu.block_size = options.block_size;
  cpu.kv_blocks =
      static_cast<int32_t>((options.kv_tokens + options.block_size - 1) / options.block_size);
  cpu.threads = options.threads;
  ASSIGN_OR_RETURN(std::unique_ptr<CpuBackend> backend,
                   CpuBackend::Create(std::move(checkpoint), cpu));
  return std::unique_ptr<Backend>(std::move(backend));
}

v1::WorkerInfo MakeInfo(const WorkerSetupOptions& options, const Engine& engine,
                        const std::vector<int32_t>& eos) {
  const model::ModelConfig& config = engine.backend().config();
  v1::WorkerInfo info;
  info.set_worker_id(options.worker_id);
  info.set_version(kVersion);
  info.set_backend(engine.backend().name());
  v1::ModelInfo* model = info.mutable_model();
  model->set_name(config.name);
  model->set_vocab_size(config.vocab_size);
  model->set_max_context(engine.limits().max_context);
  model->set_num_layers(config.num_layers);
  model->set_hidden_size(config.hidden_size);
  model->set_num_heads(config.num_heads);
  model->set_num_kv_heads(config.num_kv_heads);
  model->set_head_dim(config.head_dim);
  for (int32_t id : eos) model->add_eos_token_ids(id);
  model->set_bos_token_id(config.bos_token_id);
  model->set_dtype(config.torch_dtype);
  info.set_block_size(engine.backend().kv_block_size());
  info.set_kv_capacity_tokens(int64_t{engine.backend().kv_num_blocks()} *
                              engine.backend().kv_block_size());
  info.set_max_batch_tokens(options.max_batch_tokens);
  info.set_max_top_k(kMaxTopK);
  return info;
}

absl::Status CheckOptions(const WorkerSetupOptions& options) {
  if (options.model_dir.empty()) {
    return absl::InvalidArgumentError(
        "--model: required; point it at a Hugging Face model directory, or make one with "
        "`arbor make-model --preset tiny --out DIR`");
  }
  if (options.block_size < 1 || options.block_size > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--block_size: ", options.block_size, " is outside [1, 1024]"));
  }
  if (options.kv_tokens < options.block_size) {
    return absl::InvalidArgumentError(absl::StrCat("--kv_tokens: ", options.kv_tokens,
                                                   " is less than one block (",
                                                   options.block_size, ")"));
  }
  if (options.max_batch_tokens < 1) {
    return absl::InvalidArgumentError("--max_batch_tokens: must be >= 1");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedWorker> LoadWorker(const WorkerSetupOptions& options,
                                        const std::function<void(uint64_t, uint64_t)>& progress) {
  RETURN_IF_ERROR(CheckOptions(options));
  ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint,
                   model::Checkpoint::Open(options.model_dir, progress));
  const std::vector<int32_t> eos(checkpoint->config().eos_token_ids.begin(),
                                 checkpoint->config().eos_token_ids.end());
  EngineOptions engine_options;
  engine_options.max_batch_tokens = options.max_batch_tokens;
  engine_options.max_top_k = kMaxTopK;
  engine_options.default_policy = DefaultPolicy(options.model_dir);
  engine_options.eos_token_ids = eos;
  engine_options.max_context = options.max_context;
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                   MakeBackend(options, std::shared_ptr<const model::Checkpoint>(
                                            std::move(checkpoint))));
  LoadedWorker loaded;
  loaded.engine = std::make_unique<Engine>(std::move(backend), std::move(engine_options));
  loaded.info = MakeInfo(options, *loaded.engine, eos);
  return loaded;
}

}  // namespace arbor::worker
