// Engine end to end: decode tokens/s of Run requests through the Engine (scheduling, forward,
// per-step metrics, local policy, sampling) at batch 1, 8 and 32 on make-model's tiny and small
// checkpoints, beside what the same backend's bare forward reaches in the same run on the same
// rows (reductions requested, as the engine asks), and the host time per row of the two halves
// of a distribution's work: the reduction of the full rows (ReduceRowOnHost: metrics, candidates,
// attention statistics; inside the CPU backend's forward, on the device for CUDA), one row's
// reduction shared by the threads (as the CPU backend runs a lone row's) and the policy from the
// reduction (ItemRun::OnDistribution), the policy's share of the step beside them.
//
// Every sequence decodes at a context of 128..128+kSteps tokens. Prints one table row per case.
//
// A second table: teacher-forced scoring (RunItem.score_tokens) against plain prefill of the
// same tokens through the same engine: `batch` items per Run, each a 128-token prompt (cached
// after the first Run, as in log-likelihood evaluation) and a fresh 64-token continuation;
// scoring computes the continuation's tokens as one-token rows with logits, metrics and top-K
// each, prefill as chunks with no outputs. The ratio is what a distribution per token costs.
// An optional argument adds a checkpoint (a path or a known model name) to both tables' models.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/process_defaults.h"
#include "kernels/cpu/thread_pool.h"
#include "model/checkpoint.h"
#include "model/model_store.h"
#include "policy/policy_convert.h"
#include "tests/worker/engine/engine_harness.h"
#include "worker/backend/cpu_backend.h"
#include "worker/backend/row_reduction.h"
#include "worker/engine/item_run.h"
#include "worker/kv/kv_cache.h"

namespace arbor::worker {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPrompt = 128;
constexpr int kSteps = 32;
constexpr double kMinSeconds = 1.0;

int Threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// An engine on every hardware thread, or null after printing why not.
std::unique_ptr<Engine> LoadBenchEngine(const std::string& model_dir) {
  WorkerSetupOptions options;
  options.model = model_dir;
  options.threads = Threads();
  auto engine = testing::LoadEngine(options);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return nullptr;
  }
  return *std::move(engine);
}

// Decode tokens/s of `batch` sequences through the engine: repeated Runs of kSteps steps, each
// starting from the 128-token prompt again (truncate_to).
double EngineTokensPerSecond(const std::string& model_dir, int batch) {
  std::unique_ptr<Engine> engine = LoadBenchEngine(model_dir);
  if (engine == nullptr) return 0;
  v1::RunRequest prefill;
  for (int b = 0; b < batch; ++b) {
    *prefill.add_items() = testing::DecodeItem(b + 1, testing::Prompt(kPrompt, b), 0);
  }
  if (!testing::RunSync(*engine, prefill).ok()) return 0;
  v1::RunRequest decode;
  for (int b = 0; b < batch; ++b) {
    v1::RunItem item = testing::DecodeItem(b + 1, {}, kSteps, b);
    item.set_truncate_to(kPrompt);
    *decode.add_items() = item;
  }
  int64_t tokens = 0;
  const Clock::time_point start = Clock::now();
  while (Seconds(start) < kMinSeconds) {
    absl::StatusOr<v1::RunResponse> response = testing::RunSync(*engine, decode);
    if (!response.ok()) return 0;
    for (const v1::RunResult& result : response->results()) tokens += result.steps_size();
  }
  return tokens / Seconds(start);
}

constexpr int kContinuation = 64;

// Continuation tokens/s of Runs of `batch` new sequences (prompt + fresh continuation), scored
// (`score`) or only prefilled.
double ContinuationTokensPerSecond(const std::string& model_dir, int batch, bool score) {
  std::unique_ptr<Engine> engine = LoadBenchEngine(model_dir);
  if (engine == nullptr) return 0;
  const std::vector<int32_t> prompt = testing::Prompt(kPrompt, 1);
  uint64_t next_id = 1;
  int64_t tokens = 0;
  auto run = [&](int32_t salt) {
    v1::RunRequest request;
    std::vector<uint64_t> ids;
    for (int b = 0; b < batch; ++b) {
      std::vector<int32_t> append = prompt;
      const std::vector<int32_t> continuation = testing::Prompt(kContinuation, salt * 64 + b);
      append.insert(append.end(), continuation.begin(), continuation.end());
      v1::RunItem item = testing::DecodeItem(next_id, append, 0);
      if (score) item.set_score_tokens(kContinuation);
      item.set_top_k(score ? 5 : 0);
      ids.push_back(next_id++);
      *request.add_items() = item;
    }
    const bool ok = testing::RunSync(*engine, request).ok();
    testing::ReleaseSync(*engine, ids);
    return ok;
  };
  if (!run(0)) return 0;  // The prompt's blocks enter the prefix cache.
  const Clock::time_point start = Clock::now();
  for (int32_t salt = 1; Seconds(start) < kMinSeconds; ++salt) {
    if (!run(salt)) return 0;
    tokens += int64_t{batch} * kContinuation;
  }
  return tokens / Seconds(start);
}

struct ForwardFigures {
  double tokens_per_second = 0;
  // Host time per row: the reduction of the forward's logits and scores (ReduceRowOnHost, what
  // the CPU backend runs inside its forward and a GPU backend on the device), and the policy
  // from the reduction (ItemRun::OnDistribution, what the engine runs on the host either way).
  double reduce_seconds_per_row = 0;
  double policy_seconds_per_row = 0;
  // One row's reduction shared by the threads (RowSplitOn), as the CPU backend runs a lone row's.
  double shared_reduce_seconds = 0;
};

// Calls fn() until kMinSeconds / 2 have passed; seconds per call.
template <typename Fn>
double SecondsPerCall(const Fn& fn) {
  int64_t calls = 0;
  const Clock::time_point start = Clock::now();
  while (Seconds(start) < kMinSeconds / 2) {
    if (!fn()) return 0;
    ++calls;
  }
  return Seconds(start) / calls;
}

// The bare backend on the same shape of work: `batch` decode rows at context 128.., reductions
// requested as the engine asks; then the reduction and the policy alone on the last step's rows.
ForwardFigures BackendFigures(const std::string& model_dir, int batch) {
  ForwardFigures figures;
  auto checkpoint = model::Checkpoint::Open(model_dir);
  if (!checkpoint.ok()) return figures;
  auto backend =
      CpuBackend::Create(std::shared_ptr<const model::Checkpoint>(*std::move(checkpoint)),
                         {.kv_blocks = 4096, .block_size = 16, .threads = Threads()});
  if (!backend.ok()) return figures;
  const model::ModelConfig& config = (*backend)->config();
  v1::RunItem item = testing::DecodeItem(1, {}, 1 << 20);
  auto policy = policy::PolicyFromProto(item.policy(), entropix::PolicyConfig());
  if (!policy.ok()) return figures;
  ItemLimits limits{config.vocab_size, config.max_position_embeddings, {}};
  ItemRun run(item, *policy, entropix::LogitProcessorConfig(), limits);
  run.Begin(kPrompt + kSteps, 1, false, [](int32_t) { return 1; });
  KvCache kv(backend->get());
  std::vector<RowReduction> reductions(batch);
  // The last step's full rows (the debug path), for the reduction alone.
  std::vector<std::vector<float>> logits(batch, std::vector<float>(config.vocab_size));
  std::vector<std::vector<float>> scores(batch);
  auto step = [&](const std::vector<std::vector<int32_t>>& tokens, bool full_rows) {
    std::vector<ForwardRow> rows(batch);
    for (int b = 0; b < batch; ++b) {
      const int32_t start = static_cast<int32_t>((*kv.Find(b))->tokens.size());
      if (!kv.Append(b, tokens[b]).ok()) return false;
      scores[b].resize(static_cast<size_t>(config.num_heads) * (start + tokens[b].size()));
      reductions[b].request = run.DecodeRequest();
      rows[b] = {tokens[b], start, (*kv.Find(b))->blocks, &reductions[b]};
      if (full_rows) {
        rows[b].logits = logits[b].data();
        rows[b].last_scores = scores[b].data();
      }
    }
    return (*backend)->Forward(rows).ok();
  };
  std::vector<std::vector<int32_t>> prompts, next(batch, std::vector<int32_t>{1});
  for (int b = 0; b < batch; ++b) {
    if (!kv.Create(b).ok()) return figures;
    prompts.push_back(testing::Prompt(kPrompt, b));
  }
  if (!step(prompts, false)) return figures;
  int64_t tokens = 0;
  const Clock::time_point start = Clock::now();
  while (Seconds(start) < kMinSeconds) {
    for (int s = 0; s < kSteps; ++s) {
      if (!step(next, s == kSteps - 1)) return figures;
      tokens += batch;
    }
    for (int b = 0; b < batch; ++b) {
      if (!kv.Truncate(b, kPrompt).ok()) return figures;
    }
  }
  figures.tokens_per_second = tokens / Seconds(start);

  const double reduce_step = SecondsPerCall([&] {
    for (int b = 0; b < batch; ++b) {
      const int keys = static_cast<int>(scores[b].size() / config.num_heads);
      ReduceRowOnHost(logits[b], scores[b].data(), config.num_heads, keys, reductions[b]);
      if (!reductions[b].status.ok()) return false;
    }
    return true;
  });
  const double policy_step = SecondsPerCall([&] {
    for (int b = 0; b < batch; ++b) {
      if (!run.OnDistribution(reductions[b]).ok()) return false;
    }
    run.result().clear_steps();
    return true;
  });
  kernels::ThreadPool pool(Threads());
  figures.shared_reduce_seconds = SecondsPerCall([&] {
    const int keys = static_cast<int>(scores[0].size() / config.num_heads);
    ReduceRowOnHost(logits[0], scores[0].data(), config.num_heads, keys, reductions[0],
                    RowSplitOn(pool));
    return reductions[0].status.ok();
  });
  figures.reduce_seconds_per_row = reduce_step / batch;
  figures.policy_seconds_per_row = policy_step / batch;
  return figures;
}

// Make-model presets, then the optional model given on the command line.
struct BenchModel {
  std::string name, dir;
};

int Main(int argc, char** argv) {
  std::vector<std::unique_ptr<testing::TempModel>> temporary;
  std::vector<BenchModel> models;
  for (const char* preset : {"tiny", "small"}) {
    auto model = testing::TempModel::Make(preset, 42);
    if (!model.ok()) {
      std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
      return 1;
    }
    models.push_back({preset, (*model)->dir()});
    temporary.push_back(*std::move(model));
  }
  if (argc > 1) {
    // Both tables open the checkpoint, one through the worker's loader and one bare, so a model
    // name is resolved to its path once here.
    absl::StatusOr<std::string> path = model::ResolveModel(argv[1]);
    if (!path.ok()) {
      std::fprintf(stderr, "%s\n", path.status().ToString().c_str());
      return 1;
    }
    models.push_back({argv[1], *path});
  }

  std::printf("engine end to end, decode at context %d..%d, %d threads\n", kPrompt,
              kPrompt + kSteps, Threads());
  std::printf(
      "| model | batch | engine tok/s | forward-only tok/s | engine / forward | "
      "reduce per row | one row shared by the threads | policy per row | policy share of step "
      "|\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const BenchModel& model : models) {
    for (int batch : {1, 8, 32}) {
      const double engine = EngineTokensPerSecond(model.dir, batch);
      const ForwardFigures forward = BackendFigures(model.dir, batch);
      // One engine step = forward of the batch (reductions included) + the policy of each row.
      const double forward_step = batch / forward.tokens_per_second;
      const double policy_step = batch * forward.policy_seconds_per_row;
      std::printf("| %s | %d | %.0f | %.0f | %.2f | %.1f µs | %.1f µs | %.1f µs | %.1f %% |\n",
                  model.name.c_str(), batch, engine, forward.tokens_per_second,
                  engine / forward.tokens_per_second, forward.reduce_seconds_per_row * 1e6,
                  forward.shared_reduce_seconds * 1e6, forward.policy_seconds_per_row * 1e6,
                  100 * policy_step / (forward_step + policy_step));
      std::fflush(stdout);
    }
  }
  std::printf(
      "\nteacher-forced scoring vs prefill of the same %d-token continuations after a "
      "cached %d-token prompt\n",
      kContinuation, kPrompt);
  std::printf("| model | items per Run | scored tok/s | prefilled tok/s | scored / prefilled |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const BenchModel& model : models) {
    for (int batch : {1, 4, 16}) {
      const double scored = ContinuationTokensPerSecond(model.dir, batch, /*score=*/true);
      const double prefilled = ContinuationTokensPerSecond(model.dir, batch, /*score=*/false);
      std::printf("| %s | %d | %.0f | %.0f | %.2f |\n", model.name.c_str(), batch, scored,
                  prefilled, scored / prefilled);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace arbor::worker

int main(int argc, char** argv) {
  arbor::base::ApplyProcessDefaults();  // As the worker binary does.
  return arbor::worker::Main(argc, argv);
}
