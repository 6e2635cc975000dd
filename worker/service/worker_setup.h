// Building a ready-to-serve worker from a model directory: checkpoint, tokenizer-derived policy
// defaults (the " ..." thinking token, stop ids), backend, engine and the WorkerInfo it
// advertises. Shared by arbor-worker and the tests that run a worker in-process.
#ifndef ARBOR_WORKER_SERVICE_WORKER_SETUP_H_
#define ARBOR_WORKER_SERVICE_WORKER_SETUP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arbor/v1/worker.pb.h"
#include "grammar/token_trie.h"
#include "metrics/registry.h"
#include "model/tokenizer/tokenizer.h"
#include "worker/engine/engine.h"
#include "worker/flags/kv_budget_flags.h"

namespace arbor::worker {

inline constexpr int64_t kDefaultKvTokens = 65536;

struct WorkerSetupOptions {
  std::string model;           // A model directory, a GGUF file or a known name (model_store.h).
  std::string device = "cpu";  // "cpu" or "cuda:N".
  std::string worker_id;       // Reported in WorkerInfo.
  // KV capacity in tokens (rounded up to whole blocks); 0: what `kv_memory` holds.
  int64_t kv_tokens = 0;
  // The KV pool's memory budget (base/memory_size.h: "2GiB", "40%" of available memory); empty:
  // kDefaultKvMemoryPercent of available memory, at most kDefaultKvTokens tokens.
  std::string kv_memory;
  int32_t block_size = 16;
  int threads = 0;                       // CPU threads; 0: one per hardware thread.
  std::string weights_dtype = "native";  // native | f32 | bf16 | q8_0 (worker/backend/weights.h).
  std::string activation_quant = "q8";   // q8 | f32 (kernels/quant/quant_matmul.h); CPU only.
  std::string numerics = "invariant";    // invariant | fast (worker/backend/weights.h).
  std::string kv_dtype = "auto";  // auto (bf16 on CUDA, f32 on CPU) | f32 | bf16 (kv_dtype.h).
  int32_t max_batch_tokens = 512;
  int32_t shared_step_rows = 8;  // EngineOptions' namesake; 0: no sharing between jobs.
  int32_t shared_step_tokens = 64;  // EngineOptions' namesake.
  int32_t shared_rows_per_job = 2;  // EngineOptions' namesake.
  int32_t max_step_rows = 32;       // EngineOptions' namesake; 0: no bound.
  absl::Duration share_linger = absl::Milliseconds(500);         // EngineOptions' namesake.
  absl::Duration min_progress_interval = absl::Milliseconds(1);  // EngineOptions' namesake.
  int32_t max_context = 0;  // 0: the model's max_position_embeddings.
  // A PolicyConfig JSON file over the built-in default policy (policy/policy_file.h); empty: none.
  std::string policy_file;
  metrics::Registry* metrics = &metrics::DefaultRegistry();  // EngineOptions::metrics.
  // When set, the backend the engine gets is wrap_backend(the loaded one): the seam where tests
  // put a decorator that injects device faults.
  std::function<std::unique_ptr<Backend>(std::unique_ptr<Backend>)> wrap_backend;
};

struct LoadedWorker {
  std::unique_ptr<Engine> engine;
  v1::WorkerInfo info;
};

// Loads everything, reporting checkpoint scanning progress (bytes done, total).
absl::StatusOr<LoadedWorker> LoadWorker(
    const WorkerSetupOptions& options,
    const std::function<void(uint64_t, uint64_t)>& progress = {});

// The tokenizer's vocabulary as output constraints match it (EngineOptions::vocabulary): what
// each token adds to the text; special tokens add nothing a grammar matches (the end tokens are
// allowed apart).
std::shared_ptr<const grammar::TokenTrie> ConstraintVocabulary(const model::Tokenizer& tokenizer);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_SERVICE_WORKER_SETUP_H_
