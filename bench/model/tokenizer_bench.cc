// Encode throughput of the tokenizer, in bytes/s, next to two baselines measured in the same
// run on the same text: a memchr pass (memory-read bandwidth, the ceiling for any pass over the
// text) and the PCRE2 pre-tokenizer split alone (the part of encoding BPE cannot avoid).
//
// The tokenizer is the byte-level BPE the trainer learns from the built-in corpus (Llama 3
// pre-tokenizer, 8,000 tokens or as many as the corpus yields); the text is 1 MiB of words drawn
// at random from that corpus plus random Unicode fragments, so the word distribution is natural.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace arbor::model {
namespace {

constexpr size_t kTextBytes = 1 << 20;

const std::string& TokenizerJson() {
  static const std::string* json =
      new std::string(TrainByteLevelBpe(BuiltinCorpus(), {8000, Llama3SpecialTokens()}).value());
  return *json;
}

const std::string& Text() {
  static const std::string* text = [] {
    std::vector<std::string> words;
    PreTokenizer::Llama3().Split(BuiltinCorpus(),
                                 [&](absl::string_view w) { words.emplace_back(w); });
    std::mt19937 rng(1234);
    std::uniform_int_distribution<size_t> pick(0, words.size() - 1);
    // A long tail of words the corpus never saw: hex-like identifiers and numbers.
    std::uniform_int_distribution<int> rare(0, 19);
    std::uniform_int_distribution<unsigned> value;
    auto* out = new std::string();
    while (out->size() < kTextBytes) {
      if (rare(rng) == 0) {
        *out += " id" + std::to_string(value(rng)) + "x" + std::to_string(value(rng) % 977);
      } else {
        *out += words[pick(rng)];
      }
    }
    return out;
  }();
  return *text;
}

void BM_MemchrBaseline(benchmark::State& state) {
  const std::string& text = Text();
  for (auto _ : state) {
    // A byte that never occurs: memchr reads the whole text.
    benchmark::DoNotOptimize(std::memchr(text.data(), 0x01, text.size()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * text.size());
}
BENCHMARK(BM_MemchrBaseline);

void BM_Pcre2SplitBaseline(benchmark::State& state) {
  const std::string& text = Text();
  const PreTokenizer pre_tokenizer = PreTokenizer::Llama3();
  size_t words = 0;
  for (auto _ : state) {
    pre_tokenizer.Split(text, [&](absl::string_view) { ++words; });
  }
  benchmark::DoNotOptimize(words);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * text.size());
}
BENCHMARK(BM_Pcre2SplitBaseline)->Unit(benchmark::kMillisecond);

// Steady state: the per-word BPE cache is warm, as in a long-running server.
void BM_EncodeWarm(benchmark::State& state) {
  const std::string& text = Text();
  auto tokenizer = Tokenizer::FromJson(TokenizerJson()).value();
  size_t tokens = tokenizer->Encode(text).size();
  for (auto _ : state) {
    benchmark::DoNotOptimize(tokenizer->Encode(text));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * text.size());
  state.counters["bytes_per_token"] = static_cast<double>(text.size()) / tokens;
}
BENCHMARK(BM_EncodeWarm)->Unit(benchmark::kMillisecond);

// First encode of the text on a fresh tokenizer: every distinct word goes through BPE once.
void BM_EncodeCold(benchmark::State& state) {
  const std::string& text = Text();
  for (auto _ : state) {
    state.PauseTiming();
    auto tokenizer = Tokenizer::FromJson(TokenizerJson()).value();
    state.ResumeTiming();
    benchmark::DoNotOptimize(tokenizer->Encode(text));
    state.PauseTiming();
    tokenizer.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * text.size());
}
BENCHMARK(BM_EncodeCold)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  const std::string& text = Text();
  auto tokenizer = Tokenizer::FromJson(TokenizerJson()).value();
  const std::vector<int> ids = tokenizer->Encode(text);
  for (auto _ : state) {
    benchmark::DoNotOptimize(tokenizer->Decode(ids));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * text.size());
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace arbor::model

BENCHMARK_MAIN();
