// What structured output costs, on a model's real vocabulary (default: SmolLM2-135M-Instruct,
// or the model named or given as the first argument):
//   1. compiling schemas of 20 properties (the per-request cost, before any mask);
//   2. masks along random walks through random-ish schemas: the first masks of a fresh schema
//      (trie walks: cache misses) and the steady state (per-frame and per-stack cache hits);
//   3. the engine end to end: decode tokens/s of Runs whose items carry a constraint against
//      the same Runs without one, at batch 1 and 32, interleaved in one process, so the ratio is
//      the whole cost (mask, masked row copy, fewer candidates) as a share of a decode step.
// Prints markdown tables (docs/PERFORMANCE.md, "Structured output").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/process_defaults.h"
#include "grammar/constraint.h"
#include "grammar/json_grammar.h"
#include "model/model_store.h"
#include "model/tokenizer/gguf_tokenizer.h"
#include "tests/worker/engine/engine_harness.h"
#include "worker/service/worker_setup.h"

namespace arbor::grammar {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A schema of `n` properties cycling through the kinds a structured-output request uses.
std::string Schema(int n, int salt) {
  const char* kinds[] = {R"({"type":"string"})",
                         R"({"type":"integer"})",
                         R"({"type":"number"})",
                         R"({"type":"boolean"})",
                         R"({"enum":["red","green","blue"]})",
                         R"({"type":"array","items":{"type":"string"},"maxItems":4})",
                         R"({"type":["string","null"]})",
                         R"({"type":"object","properties":{"x":{"type":"integer"}},)"
                         R"("required":["x"]})"};
  std::string properties, required;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&properties, i ? "," : "", "\"field_", salt, "_", i,
                    "\":", kinds[(i + salt) % 8]);
    if (i % 2 == 0) {
      absl::StrAppend(&required, required.empty() ? "" : ",", "\"field_", salt, "_", i, "\"");
    }
  }
  return absl::StrCat(R"({"type":"object","additionalProperties":false,"properties":{)", properties,
                      "},\"required\":[", required, "]}");
}

void CompileTable() {
  std::printf("| schema | compile (mean of 200) |\n|---|---|\n");
  for (int n : {5, 20, 100}) {
    const Clock::time_point start = Clock::now();
    for (int salt = 0; salt < 200; ++salt) {
      if (!CompileJsonSchema(Schema(n, salt)).ok()) std::abort();
    }
    std::printf("| %d properties | %.1f µs |\n", n, Seconds(start) / 200 * 1e6);
  }
}

// Random walks of up to 200 tokens: per schema, the time of the first walk's masks (cold
// caches) and of four later walks' masks (warm), per step.
void MaskTable(const std::shared_ptr<const TokenTrie>& trie, int32_t vocab, int32_t end_token) {
  std::printf(
      "\n| masks on %d tokens | cold: first walk, per step | warm: later walks, per step "
      "| trie walks per schema |\n|---|---|---|---|\n",
      vocab);
  const std::vector<int32_t> ends = {end_token};
  std::mt19937 rng(1);
  for (int n : {5, 20}) {
    double cold = 0, warm = 0;
    int64_t cold_steps = 0, warm_steps = 0, walks = 0;
    for (int salt = 0; salt < 8; ++salt) {
      auto compiled =
          std::make_shared<CompiledConstraint>(*CompileJsonSchema(Schema(n, salt)), trie, vocab);
      for (int walk = 0; walk < 5; ++walk) {
        ConstraintState state(compiled);
        TokenBits bits;
        for (int step = 0; step < 200; ++step) {
          const Clock::time_point start = Clock::now();
          state.Mask(ends, bits);
          (walk == 0 ? cold : warm) += Seconds(start);
          ++(walk == 0 ? cold_steps : warm_steps);
          std::vector<int32_t> allowed;
          for (int32_t id = 0; id < vocab; ++id) {
            if (TestBit(bits, id)) allowed.push_back(id);
          }
          const int32_t token = allowed[rng() % allowed.size()];
          if (token == end_token || !state.Add(token)) break;
        }
      }
      walks += compiled->masker().frame_misses();
    }
    std::printf("| %d-property schemas | %.1f µs | %.1f µs | %.1f |\n", n, cold / cold_steps * 1e6,
                warm / warm_steps * 1e6, walks / 8.0);
  }
}

// Decode tokens/s of `batch` items, each Run kSteps steps from the same prompt again; with
// `constraint` set on every item (its output starts after the prompt).
double EngineTokensPerSecond(worker::Engine& engine, int batch,
                             const v1::OutputConstraint* constraint) {
  constexpr int kPrompt = 64, kSteps = 32;
  v1::RunRequest prefill, decode;
  for (int b = 0; b < batch; ++b) {
    *prefill.add_items() =
        worker::testing::DecodeItem(b + 1, worker::testing::Prompt(kPrompt, b), 0);
    v1::RunItem item = worker::testing::DecodeItem(b + 1, {}, kSteps, b);
    item.set_truncate_to(kPrompt);
    if (constraint != nullptr) {
      *item.mutable_constraint() = *constraint;
      item.set_prompt_length(kPrompt);
      item.mutable_stop()->set_ignore_eos(false);
    }
    *decode.add_items() = item;
  }
  if (!worker::testing::RunSync(engine, prefill).ok()) return 0;
  std::vector<uint64_t> ids;
  for (int b = 0; b < batch; ++b) ids.push_back(b + 1);
  int64_t tokens = 0;
  const Clock::time_point start = Clock::now();
  while (Seconds(start) < 2.0) {
    absl::StatusOr<v1::RunResponse> response = worker::testing::RunSync(engine, decode);
    if (!response.ok()) {
      std::fprintf(stderr, "%s\n", response.status().ToString().c_str());
      return 0;
    }
    for (const v1::RunResult& result : response->results()) tokens += result.steps_size();
  }
  const double rate = tokens / Seconds(start);
  worker::testing::ReleaseSync(engine, ids);
  return rate;
}

void EngineTable(const std::string& model_dir) {
  worker::WorkerSetupOptions options;
  options.model = model_dir;
  options.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  auto engine = worker::testing::LoadEngine(options);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return;
  }
  v1::OutputConstraint object, schema;
  object.set_json_object(true);
  schema.set_json_schema(Schema(20, 0));
  std::printf(
      "\n| engine, %d threads | batch | unconstrained tok/s | json_object tok/s | "
      "20-property schema tok/s | cost (schema) |\n|---|---|---|---|---|---|\n",
      options.threads);
  for (int batch : {1, 32}) {
    double plain = 0, with_object = 0, with_schema = 0;
    for (int round = 0; round < 2; ++round) {  // Interleaved; the best of two each.
      plain = std::max(plain, EngineTokensPerSecond(**engine, batch, nullptr));
      with_object = std::max(with_object, EngineTokensPerSecond(**engine, batch, &object));
      with_schema = std::max(with_schema, EngineTokensPerSecond(**engine, batch, &schema));
    }
    std::printf("| | %d | %.0f | %.0f | %.0f | %.1f %% |\n", batch, plain, with_object, with_schema,
                100 * (plain / with_schema - 1));
    std::fflush(stdout);
  }
}

int Main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "smollm2-135m-instruct";
  absl::StatusOr<std::string> path = model::ResolveModel(name);
  if (!path.ok()) {
    std::fprintf(stderr, "%s\n", path.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<model::ModelTokenizer> tokenizer = model::LoadModelTokenizer(*path);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  const model::Tokenizer& vocab = *tokenizer->tokenizer;
  std::printf("structured output on %s (%d tokens)\n\n", name.c_str(), vocab.vocab_size());
  CompileTable();
  int32_t end_token = 0;
  for (int id = 0; id < vocab.vocab_size(); ++id) {
    if (vocab.IsSpecial(id)) end_token = id;  // Any special token stands for the end here.
  }
  MaskTable(worker::ConstraintVocabulary(vocab), vocab.vocab_size(), end_token);
  EngineTable(*path);
  return 0;
}

}  // namespace
}  // namespace arbor::grammar

int main(int argc, char** argv) {
  arbor::base::ApplyProcessDefaults();
  return arbor::grammar::Main(argc, argv);
}
