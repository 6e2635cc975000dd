#include "worker/service/worker_setup.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/memory_size.h"
#include "base/status_macros.h"
#include "grammar/token_trie.h"
#include "kernels/quant/quant_matmul.h"
#include "model/checkpoint.h"
#include "model/model_identity.h"
#include "model/tiny_model.h"
#include "model/tokenizer/gguf_tokenizer.h"
#include "policy/policy_file.h"
#include "worker/backend/cpu_backend.h"
#ifdef ARBOR_WITH_CUDA_BACKEND
#include "worker/backend/cuda_backend.h"
#endif

namespace arbor::worker {
namespace {

constexpr char kVersion[] = "0.1.0";
constexpr int32_t kMaxTopK = 256;

// The policy's default thinking token: the model's own " ..." (Llama 3: id 2564). Without a
// tokenizer there is none, so INSERT is disabled rather than guessed.
entropix::PolicyConfig DefaultPolicy(const model::Tokenizer* tokenizer) {
  entropix::PolicyConfig policy;
  if (tokenizer == nullptr) {
    policy.insert.max_per_job = 0;
    return policy;
  }
  for (int id : tokenizer->Encode(" ...", /*parse_special=*/false)) {
    policy.insert.tokens.push_back(id);
  }
  return policy;
}

// "cpu" → -1; "cuda" or "cuda:N" → N.
absl::StatusOr<int> ParseDevice(const std::string& device) {
  if (device == "cpu") return -1;
  if (device == "cuda") return 0;
  int ordinal = 0;
  absl::string_view rest = device;
  if (absl::ConsumePrefix(&rest, "cuda:") && absl::SimpleAtoi(rest, &ordinal) && ordinal >= 0) {
    return ordinal;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device=", device, ": expected cpu, cuda or cuda:N"));
}

// Layers × K and V × kv heads × head_dim × the dtype's bytes.
int64_t KvBytesPerToken(const model::ModelConfig& config, KvDtype dtype) {
  return int64_t{config.num_layers} * 2 * config.num_kv_heads * config.head_dim *
         KvDtypeBytes(dtype);
}

// The KV pool's tokens: --kv_tokens as given, else what the memory budget holds of this model's
// KV (layers × K and V × kv heads × head_dim × the dtype's bytes, per token). The default budget
// is a share of the host's available memory, so it only applies on the CPU; a GPU's pool keeps
// kDefaultKvTokens unless --kv_memory gives a size.
absl::StatusOr<int64_t> ResolveKvTokens(const WorkerSetupOptions& options,
                                        const model::ModelConfig& config, KvDtype dtype,
                                        bool cuda) {
  if (options.kv_tokens > 0) return options.kv_tokens;
  const int64_t per_token = KvBytesPerToken(config, dtype);
  const std::optional<int64_t> available = base::AvailableMemoryBytes();
  const bool by_default = options.kv_memory.empty();
  if (by_default && (cuda || !available)) return kDefaultKvTokens;
  if (!by_default && absl::EndsWith(options.kv_memory, "%") && (cuda || !available)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kv_memory=", options.kv_memory, ": a percentage needs the host's available memory",
        cuda ? " and the KV cache is on the GPU" : ", which /proc/meminfo does not give",
        "; give a size such as 4GiB"));
  }
  int64_t budget = by_default ? *available / 100 * kDefaultKvMemoryPercent : 0;
  if (!by_default) {
    absl::StatusOr<int64_t> parsed =
        base::ParseMemorySize(options.kv_memory, available.value_or(0));
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--kv_memory: ", parsed.status().message()));
    }
    budget = *parsed;
  }
  const int64_t tokens =
      by_default ? std::min(budget / per_token, kDefaultKvTokens) : budget / per_token;
  if (tokens < options.block_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kv_memory: ", budget, " bytes hold ", tokens, " tokens of this model's KV (", per_token,
        " bytes each), less than one block of ", options.block_size,
        "; give more (e.g. --kv_memory=1GiB) or set --kv_tokens"));
  }
  spdlog::info("KV budget {}: {} tokens of {} bytes each",
               by_default ? absl::StrCat(kDefaultKvMemoryPercent, "% of available memory, at most ",
                                         kDefaultKvTokens, " tokens")
                          : "--kv_memory=" + options.kv_memory,
               tokens, per_token);
  return tokens;
}

#ifdef ARBOR_WITH_CUDA_BACKEND
// The CUDA backend, and a line saying what it holds.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(
    const WorkerSetupOptions& options, std::shared_ptr<const model::Checkpoint> checkpoint,
    const CudaBackendOptions& cuda) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> backend,
                   CudaBackend::Create(std::move(checkpoint), cuda));
  spdlog::info(
      "weights ({}{}): {:.1f} MB on cuda:{}, streamed per decode step ({} numerics); KV cache "
      "({}) for {} tokens",
      options.weights_dtype, cuda.keep_blocks ? ": GGUF blocks kept, the rest bf16" : ": bf16",
      backend->weight_bytes() / 1e6, cuda.device, cuda.batch_invariant ? "batch-invariant" : "fast",
      cuda.kv_dtype == KvDtype::kBF16 ? "bf16" : "f32",
      int64_t{backend->kv_num_blocks()} * backend->kv_block_size());
  return std::unique_ptr<Backend>(std::move(backend));
}
#endif

// The backend on device `ordinal` (-1: the CPU) with its KV pool of `kv_dtype`.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(
    const WorkerSetupOptions& options, std::shared_ptr<const model::Checkpoint> checkpoint,
    int ordinal, KvDtype kv_dtype) {
  ASSIGN_OR_RETURN(const int64_t kv_tokens,
                   ResolveKvTokens(options, checkpoint->config(), kv_dtype, ordinal >= 0));
  const int32_t kv_blocks =
      static_cast<int32_t>((kv_tokens + options.block_size - 1) / options.block_size);
  ASSIGN_OR_RETURN(const WeightsDtype weights_dtype, ParseWeightsDtype(options.weights_dtype));
  ASSIGN_OR_RETURN(const bool batch_invariant, ParseNumerics(options.numerics));
  if (ordinal >= 0) {
#ifdef ARBOR_WITH_CUDA_BACKEND
    if (weights_dtype == WeightsDtype::kF32 || weights_dtype == WeightsDtype::kQ8_0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--weights_dtype=", options.weights_dtype,
          ": on CUDA the weights are native (GGUF blocks kept, the rest bf16) or bf16"));
    }
    return MakeCudaBackend(options, std::move(checkpoint),
                           {.device = ordinal,
                            .kv_blocks = kv_blocks,
                            .block_size = options.block_size,
                            .kv_dtype = kv_dtype,
                            .batch_invariant = batch_invariant,
                            .keep_blocks = weights_dtype == WeightsDtype::kNative});
#else
    return absl::UnimplementedError(absl::StrCat(
        "--device=", options.device,
        ": this build has no CUDA backend (configure with -DARBOR_WITH_CUDA=ON where nvcc is "
        "installed); use --device=cpu"));
#endif
  }
  CpuBackendOptions cpu;
  cpu.block_size = options.block_size;
  cpu.kv_blocks = kv_blocks;
  cpu.threads = options.threads;
  cpu.weights_dtype = weights_dtype;
  ASSIGN_OR_RETURN(cpu.activation_quant, ParseActivationQuant(options.activation_quant));
  cpu.batch_invariant = batch_invariant;
  cpu.kv_dtype = kv_dtype;
  ASSIGN_OR_RETURN(std::unique_ptr<CpuBackend> backend,
                   CpuBackend::Create(std::move(checkpoint), cpu));
  spdlog::info(
      "weights ({}): {}; {:.1f} MB streamed per decode step, {:.1f} MB converted at load; "
      "quantized matrices meet {} activations ({} numerics); KV cache ({}) {:.1f} MB for {} "
      "tokens",
      options.weights_dtype, backend->weight_types(), backend->weight_bytes() / 1e6,
      backend->converted_bytes() / 1e6,
      options.activation_quant == "q8"
          ? "8-bit (" + kernels::Q8KernelsSummary(cpu.batch_invariant) + ")"
          : "fp32",
      cpu.batch_invariant ? "batch-invariant" : "fast",
      cpu.kv_dtype == KvDtype::kBF16 ? "bf16" : "f32", backend->kv_bytes() / 1e6,
      int64_t{backend->kv_num_blocks()} * backend->kv_block_size());
  return std::unique_ptr<Backend>(std::move(backend));
}

v1::WorkerInfo MakeInfo(const WorkerSetupOptions& options, const Engine& engine,
                        const std::vector<int32_t>& eos, int64_t kv_bytes_per_token) {
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
  info.set_kv_bytes_per_token(kv_bytes_per_token);
  info.set_max_batch_tokens(options.max_batch_tokens);
  info.set_max_top_k(kMaxTopK);
  return info;
}

absl::Status CheckOptions(const WorkerSetupOptions& options) {
  if (options.model.empty()) {
    return absl::InvalidArgumentError(
        "--model: required; give a GGUF file, a Hugging Face model directory (make one with "
        "`arbor make-model --preset tiny --out DIR`), smollm2-135m-instruct, or tiny");
  }
  if (options.block_size < 1 || options.block_size > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--block_size: ", options.block_size, " is outside [1, 1024]"));
  }
  if (options.kv_tokens != 0 && options.kv_tokens < options.block_size) {
    return absl::InvalidArgumentError(absl::StrCat("--kv_tokens: ", options.kv_tokens,
                                                   " is less than one block (", options.block_size,
                                                   "); 0 sizes the pool from --kv_memory"));
  }
  ASSIGN_OR_RETURN(const WeightsDtype weights_dtype, ParseWeightsDtype(options.weights_dtype));
  ASSIGN_OR_RETURN(const int ordinal, ParseDevice(options.device));
  // Checked before the model loads: the CUDA backend computes with bf16 weights.
  if (ordinal >= 0 && weights_dtype != WeightsDtype::kNative &&
      weights_dtype != WeightsDtype::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("--weights_dtype=", options.weights_dtype,
                     ": the CUDA backend computes with bf16 weights; use native or bf16"));
  }
  if (options.max_batch_tokens < 1) {
    return absl::InvalidArgumentError("--max_batch_tokens: must be >= 1");
  }
  if (options.shared_step_rows < 0) {
    return absl::InvalidArgumentError("--shared_step_rows: must be >= 0 (0: no sharing)");
  }
  if (options.max_step_rows < 0) {
    return absl::InvalidArgumentError("--max_step_rows: must be >= 0 (0: no bound)");
  }
  if (options.shared_step_tokens < 1) {
    return absl::InvalidArgumentError("--shared_step_tokens: must be >= 1");
  }
  if (options.shared_rows_per_job < 1) {
    return absl::InvalidArgumentError("--shared_rows_per_job: must be >= 1");
  }
  if (options.share_linger < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--share_linger_ms: must be >= 0 (0: widen at once)");
  }
  return ParseKvDtype(options.kv_dtype, ordinal >= 0).status();
}

}  // namespace

absl::StatusOr<LoadedWorker> LoadWorker(const WorkerSetupOptions& options,
                                        const std::function<void(uint64_t, uint64_t)>& progress) {
  RETURN_IF_ERROR(CheckOptions(options));
  ASSIGN_OR_RETURN(const std::string model_path, model::ResolveModelOrTiny(options.model));
  ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint,
                   model::Checkpoint::Open(model_path, progress));
  const std::vector<int32_t> eos(checkpoint->config().eos_token_ids.begin(),
                                 checkpoint->config().eos_token_ids.end());
  EngineOptions engine_options;
  engine_options.max_batch_tokens = options.max_batch_tokens;
  engine_options.shared_step_rows = options.shared_step_rows;
  engine_options.shared_step_tokens = options.shared_step_tokens;
  engine_options.shared_rows_per_job = options.shared_rows_per_job;
  engine_options.max_step_rows = options.max_step_rows;
  engine_options.share_linger = options.share_linger;
  engine_options.min_progress_interval = options.min_progress_interval;
  engine_options.max_top_k = kMaxTopK;
  absl::StatusOr<model::ModelTokenizer> tokenizer = model::LoadModelTokenizer(model_path);
  if (!tokenizer.ok()) {
    spdlog::warn(
        "no usable tokenizer ({}); INSERT is disabled by default and output constraints "
        "are refused",
        tokenizer.status().ToString());
  }
  // Its identity, which the coordinator checks against its own model's at registration.
  const std::string fingerprint =
      tokenizer.ok() ? model::ModelFingerprint(checkpoint->config(), *tokenizer->tokenizer) : "";
  // What was loaded, in one line: the checkpoint as stored, and the template chat prompts get.
  spdlog::info("loaded {}; chat template {}", checkpoint->Describe(),
               model::DescribeChatTemplate(
                   tokenizer.ok() ? tokenizer->chat_template
                                  : absl::StatusOr<model::ChatTemplate>(tokenizer.status())));
  engine_options.default_policy =
      DefaultPolicy(tokenizer.ok() ? tokenizer->tokenizer.get() : nullptr);
  if (tokenizer.ok()) engine_options.vocabulary = ConstraintVocabulary(*tokenizer->tokenizer);
  if (!options.policy_file.empty()) {
    ASSIGN_OR_RETURN(engine_options.default_policy,
                     policy::ApplyPolicyFile(options.policy_file, engine_options.default_policy));
  }
  engine_options.eos_token_ids = eos;
  engine_options.max_context = options.max_context;
  engine_options.metrics = options.metrics;
  ASSIGN_OR_RETURN(const int ordinal, ParseDevice(options.device));
  ASSIGN_OR_RETURN(const KvDtype kv_dtype, ParseKvDtype(options.kv_dtype, ordinal >= 0));
  const int64_t kv_bytes_per_token = KvBytesPerToken(checkpoint->config(), kv_dtype);
  engine_options.kv_bytes_per_token = kv_bytes_per_token;
  ASSIGN_OR_RETURN(
      std::unique_ptr<Backend> backend,
      MakeBackend(options, std::shared_ptr<const model::Checkpoint>(std::move(checkpoint)), ordinal,
                  kv_dtype));
  if (options.wrap_backend) backend = options.wrap_backend(std::move(backend));
  LoadedWorker loaded;
  loaded.engine = std::make_unique<Engine>(std::move(backend), std::move(engine_options));
  loaded.info = MakeInfo(options, *loaded.engine, eos, kv_bytes_per_token);
  loaded.info.mutable_model()->set_fingerprint(fingerprint);
  return loaded;
}

std::shared_ptr<const grammar::TokenTrie> ConstraintVocabulary(const model::Tokenizer& tokenizer) {
  std::vector<std::string> bytes(tokenizer.vocab_size());
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    if (!tokenizer.IsSpecial(id)) bytes[id] = std::string(tokenizer.TokenBytes(id));
  }
  return std::make_shared<const grammar::TokenTrie>(std::move(bytes));
}

}  // namespace arbor::worker
