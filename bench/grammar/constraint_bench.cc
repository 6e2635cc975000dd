// What structured output costs, on a model's real vocabulary (default: SmolLM2-135M-Instruct,
// or the model named or given as the first argument):
//   1. compiling schemas of 20 properties (the per-request cost, before any mask);
//   2. the per-token mask's mean and p99 (every step timed, fresh schemas, so cold caches count)
//      and the compile time over realistic schemas, a 20,000-property object and a
//      20,000-value enum at the schema size limit;
//   3. the engine end to end: decode tokens/s of Runs whose items carry a constraint against
//      the same Runs without one, at batch 1 and 32, interleaved in one process, so the ratio is
//      the whole cost (mask, masked row copy, fewer candidates) as a share of a decode step.
// Arguments: [MODEL] [--masks_only]. Prints markdown tables (docs/PERFORMANCE.md, "Structured
// output").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
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

// Schemas of the kinds structured-output requests send: tool arguments, records with nested
// objects and arrays, enums, nullable fields, maps and a recursive tree through $ref.
std::vector<std::string> RealisticSchemas() {
  return {
      R"({"type":"object","properties":{"location":{"type":"string","description":"City"},)"
      R"("unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},)"
      R"("required":["location","unit"],"additionalProperties":false})",
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},)"
      R"("email":{"type":["string","null"]},"address":{"type":"object","properties":{)"
      R"("street":{"type":"string"},"city":{"type":"string"},"zip":{"type":"string"}},)"
      R"("required":["street","city"]},"tags":{"type":"array","items":{"type":"string"},)"
      R"("maxItems":5}},"required":["name","age","address"]})",
      R"({"type":"object","properties":{"order_id":{"type":"string"},"items":{"type":"array",)"
      R"("minItems":1,"items":{"type":"object","properties":{"sku":{"type":"string"},)"
      R"("quantity":{"type":"integer"},"price":{"type":"number"}},)"
      R"("required":["sku","quantity","price"]}},"status":{"enum":["pending","paid",)"
      R"("shipped","cancelled"]},"gift":{"type":"boolean"}},"required":["order_id","items"]})",
      R"({"type":"object","properties":{"sentiment":{"enum":["positive","negative",)"
      R"("neutral"]},"confidence":{"type":"number"},"entities":{"type":"array","items":{)"
      R"("type":"object","properties":{"text":{"type":"string"},"kind":{"enum":["person",)"
      R"("place","organisation","date"]}},"required":["text","kind"]}}},)"
      R"("required":["sentiment","confidence","entities"]})",
      R"({"$defs":{"node":{"type":"object","properties":{"label":{"type":"string"},)"
      R"("children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":3}},)"
      R"("required":["label"]}},"$ref":"#/$defs/node"})",
      R"({"type":"object","properties":{"title":{"type":"string"},"scores":{"type":"object",)"
      R"("additionalProperties":{"type":"number"}},"meta":{"type":"object"},)"
      R"("answer":{"anyOf":[{"type":"integer"},{"type":"string"},{"type":"null"}]}},)"
      R"("required":["title","scores"]})",
  };
}

// Records whose strings carry a `pattern` or a `format` (string_keywords.h): contact details,
// an event log entry, a product with identifier patterns, one of them unanchored.
std::vector<std::string> PatternFormatSchemas() {
  return {
      R"({"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":40},)"
      R"("email":{"type":"string","format":"email"},"phone":{"type":"string","pattern":)"
      R"("^\\+?[0-9]{1,3}[ -]?\\(?[0-9]{3}\\)?[ -]?[0-9]{3}-[0-9]{4}$"},)"
      R"("birthday":{"type":"string","format":"date"}},"required":["name","email","phone"],)"
      R"("additionalProperties":false})",
      R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},)"
      R"("at":{"type":"string","format":"date-time"},"host":{"type":"string","format":"ipv4"},)"
      R"("url":{"type":"string","format":"uri"}},"required":["id","at","host"]})",
      R"({"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},)"
      R"("slug":{"type":"string","pattern":"^[a-z0-9]+(?:-[a-z0-9]+)*$","maxLength":60},)"
      R"("code":{"type":"string","pattern":"[A-Z]{2}"}},"required":["sku","slug","code"]})",
  };
}

// An object of `n` optional properties of any value, and an enum of `n` strings: the shapes
// whose masks used to cost the vocabulary times the names.
std::string WideObjectSchema(int n) {
  std::string properties;
  for (int i = 0; i < n; ++i) absl::StrAppend(&properties, i ? "," : "", "\"f", i, "\":{}");
  return absl::StrCat(R"({"type":"object","properties":{)", properties, "}}");
}

std::string BigEnumSchema(int n) {
  std::string values;
  for (int i = 0; i < n; ++i) absl::StrAppend(&values, i ? "," : "", "\"sku-", i, "\"");
  return absl::StrCat(R"({"type":"object","properties":{"sku":{"enum":[)", values,
                      "]}},\"required\":[\"sku\"]}");
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

// Every mask's time along `walks` random walks of up to 200 tokens (each drawn from the mask)
// through `compiled`, from its first (cold caches) on.
void TimeWalks(const std::shared_ptr<CompiledConstraint>& compiled, int walks, int32_t vocab,
               int32_t end_token, std::mt19937& rng, std::vector<double>& times) {
  const std::vector<int32_t> ends = {end_token};
  for (int walk = 0; walk < walks; ++walk) {
    ConstraintState state(compiled);
    TokenBits bits;
    for (int step = 0; step < 200; ++step) {
      const Clock::time_point start = Clock::now();
      state.Mask(ends, bits);
      times.push_back(Seconds(start));
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < vocab; ++id) {
        if (TestBit(bits, id)) allowed.push_back(id);
      }
      const int32_t token = allowed[rng() % allowed.size()];
      if (token == end_token || !state.Add(token)) break;
    }
  }
}

// Per group of schemas: compile time (grammar and masker, the worker's cost per new schema),
// and the mean, p99 and maximum of the per-token mask over every step of every walk.
void MaskTable(const std::shared_ptr<const TokenTrie>& trie, int32_t vocab, int32_t end_token) {
  std::printf(
      "\n| masks on %d tokens | schemas | largest schema | compile, mean (max) | mask mean | "
      "mask p99 | mask max | steps |\n|---|---|---|---|---|---|---|---|\n",
      vocab);
  std::vector<std::string> random20;
  for (int salt = 0; salt < 8; ++salt) random20.push_back(Schema(20, salt));
  const std::pair<const char*, std::vector<std::string>> groups[] = {
      {"realistic", RealisticSchemas()},
      {"patterns and formats", PatternFormatSchemas()},
      {"random, 20 properties", random20},
      {"20,000 optional properties", {WideObjectSchema(20000)}},
      {"enum of 20,000 strings", {BigEnumSchema(20000)}},
  };
  std::mt19937 rng(1);
  for (const auto& [name, schemas] : groups) {
    std::vector<double> times;
    double compile = 0, compile_max = 0;
    size_t largest = 0;
    for (const std::string& schema : schemas) {
      largest = std::max(largest, schema.size());
      const Clock::time_point start = Clock::now();
      auto compiled = std::make_shared<CompiledConstraint>(*CompileJsonSchema(schema), trie, vocab);
      compile += Seconds(start);
      compile_max = std::max(compile_max, Seconds(start));
      TimeWalks(compiled, 5, vocab, end_token, rng, times);
    }
    std::sort(times.begin(), times.end());
    double sum = 0;
    for (double t : times) sum += t;
    std::printf("| %s | %zu | %zu bytes | %.2f ms (%.2f ms) | %.1f µs | %.1f µs | %.1f µs | %zu |\n",
                name, schemas.size(), largest, compile / schemas.size() * 1e3, compile_max * 1e3,
                sum / times.size() * 1e6, times[times.size() * 99 / 100] * 1e6,
                times.back() * 1e6, times.size());
    std::fflush(stdout);
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

// The CPU's model name, for the figures' record.
std::string CpuName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// Arguments: [MODEL] [--masks_only] (skips the engine's table).
int Main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "smollm2-135m-instruct";
  const bool masks_only = argc > 2 && std::string(argv[2]) == "--masks_only";
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
  std::printf("structured output on %s (%d tokens), %s\n\n", name.c_str(), vocab.vocab_size(),
              CpuName().c_str());
  CompileTable();
  int32_t end_token = 0;
  for (int id = 0; id < vocab.vocab_size(); ++id) {
    if (vocab.IsSpecial(id)) end_token = id;  // Any special token stands for the end here.
  }
  MaskTable(worker::ConstraintVocabulary(vocab), vocab.vocab_size(), end_token);
  if (!masks_only) EngineTable(*path);
  return 0;
}

}  // namespace
}  // namespace arbor::grammar

int main(int argc, char** argv) {
  arbor::base::ApplyProcessDefaults();
  return arbor::grammar::Main(argc, argv);
}
