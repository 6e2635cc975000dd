// SmolLM2-135M-Instruct in Arbor against llama.cpp on the same GGUF file, through golden data
// that tests/model/llama_cpp_golden.py wrote with llama-cpp-python (its version and llama.cpp
// commit are in the file; a `reference`-labelled test re-checks the file when that package is
// installed, see scripts/llama-cpp-reference.sh):
//  - the tokenizer: every line, several multi-line chunks and the whole of
//    tests/model/data/tokenizer_corpus.txt (Unicode, digits, whitespace runs, code, ChatML
//    markup) encode to llama.cpp's ids, with and without special-token parsing, and decode back;
//  - the chat template: Arbor's rendering of each chat prompt gives llama.cpp's prompt ids;
//  - greedy decoding: Arbor's argmax continuations equal llama.cpp's token for token, or first
//    diverge on a near-tie: Arbor takes llama.cpp's runner-up, and the two tokens' logits are
//    within kNearTie of each other in both engines. Arbor runs its default mode, 8-bit
//    activations per 32 values and integer dot products, as llama.cpp multiplies its Q4_1
//    weights; the engines still differ in their rounding (llama.cpp's activation scales are f16
//    and its KV cache f16, Arbor's fp32; their summation orders differ). Measured on the steps
//    where they agree, the gap between the top two logits differs between the engines by up to
//    0.51 (0.42 in Arbor's exact mode, --activation_quant=f32), so a swap of two tokens closer
//    than 0.5 in both is within that noise. Where the continuations part moves with rounding
//    noise, not with the mode: 146 of 152 compared tokens identical in the default mode (186 of
//    192 with an earlier build of the same kernels that only summed in another order), 160 of 165
//    in the exact mode; every parting is on such a near-tie.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "base/files.h"
#include "model/checkpoint.h"
#include "model/model_store.h"
#include "model/tokenizer/gguf_tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/support/smollm2.h"
#include "worker/backend/cpu_backend.h"
#include "worker/kv/kv_cache.h"

namespace arbor::worker {
namespace {

using nlohmann::json;

constexpr char kGolden[] = ARBOR_SOURCE_DIR "/tests/model/data/smollm2_llama_cpp.json";
constexpr double kNearTie = 0.5;  // Logits; see above.

class SmolLM2LlamaCppTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::string> path = arbor::testing::SmolLM2Path();
    if (absl::IsUnavailable(path.status())) GTEST_SKIP() << path.status();  // No network.
    ASSERT_TRUE(path.ok()) << path.status();
    path_ = new std::string(*path);
    auto tokenizer = model::LoadModelTokenizer(*path_);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = new model::ModelTokenizer(*std::move(tokenizer));
    absl::StatusOr<std::string> text = base::ReadFile(kGolden);
    ASSERT_TRUE(text.ok()) << text.status();
    golden_ = new json(json::parse(*text));
  }
  static void TearDownTestSuite() {
    delete golden_;
    delete tokenizer_;
    delete path_;
  }

  static const model::Tokenizer& tokenizer() { return *tokenizer_->tokenizer; }

  static inline std::string* path_ = nullptr;
  static inline model::ModelTokenizer* tokenizer_ = nullptr;
  static inline json* golden_ = nullptr;
};

std::vector<int> Ids(const json& ids) { return ids.get<std::vector<int>>(); }

TEST_F(SmolLM2LlamaCppTest, GoldenDataIsForThisFile) {
  EXPECT_EQ((*golden_)["gguf_sha256"], model::KnownModels()[0].sha256);
  EXPECT_GE((*golden_)["tokenize"].size(), 150u);
  EXPECT_GE((*golden_)["greedy"].size(), 6u);
}

TEST_F(SmolLM2LlamaCppTest, TokenizerMatchesLlamaCpp) {
  int cases = 0;
  for (const json& c : (*golden_)["tokenize"]) {
    const std::string text = c["text"];
    SCOPED_TRACE(c["kind"].get<std::string>() + " " + c.value("line", json(0)).dump() + ": " +
                 text.substr(0, 60));
    const std::vector<int> plain = tokenizer().Encode(text, /*parse_special=*/false);
    EXPECT_EQ(plain, Ids(c["ids_plain"]));
    EXPECT_EQ(tokenizer().Encode(text, /*parse_special=*/true), Ids(c["ids_special"]));
    EXPECT_EQ(tokenizer().Decode(plain), c["decoded"].get<std::string>());
    ++cases;
  }
  EXPECT_EQ(cases, static_cast<int>((*golden_)["tokenize"].size()));
}

TEST_F(SmolLM2LlamaCppTest, ChatTemplateRendersLlamaCppPromptIds) {
  ASSERT_TRUE(tokenizer_->chat_template.ok()) << tokenizer_->chat_template.status();
  int chats = 0;
  for (const json& g : (*golden_)["greedy"]) {
    if (g["kind"] != "chat") continue;
    std::vector<model::ChatMessage> messages;
    for (const json& m : g["messages"]) messages.push_back({m["role"], m["content"]});
    auto ids = model::ApplyChatTemplate(tokenizer(), *tokenizer_->chat_template, messages, true);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, Ids(g["prompt_ids"])) << g["name"];
    ++chats;
  }
  EXPECT_GE(chats, 4);
}

// Argmax of `logits`, ties to the lower id (as the golden data's selection).
int32_t Argmax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST_F(SmolLM2LlamaCppTest, GreedyContinuationsMatchLlamaCpp) {
  auto checkpoint = model::Checkpoint::Open(*path_);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto backend =
      CpuBackend::Create(std::shared_ptr<const model::Checkpoint>(std::move(checkpoint).value()),
                         {.kv_blocks = 256, .block_size = 16, .threads = 2});
  ASSERT_TRUE(backend.ok()) << backend.status();
  int identical = 0, compared = 0;
  double max_gap_shift = 0;  // |llama.cpp's top-two gap − Arbor's| on the steps that agree.
  SeqId id = 0;
  for (const json& g : (*golden_)["greedy"]) {
    SCOPED_TRACE(g["name"].get<std::string>());
    const std::vector<int> want = Ids(g["generated_ids"]);
    KvCache kv(backend->get());
    ASSERT_TRUE(kv.Create(++id).ok());
    std::vector<int32_t> next(g["prompt_ids"].begin(), g["prompt_ids"].end());
    std::vector<float> logits((*backend)->config().vocab_size);
    for (size_t step = 0; step < want.size(); ++step) {
      absl::StatusOr<int32_t> cached = kv.Append(id, next);
      ASSERT_TRUE(cached.ok()) << cached.status();
      const KvSequence* seq = *kv.Find(id);
      ForwardRow row{.tokens = std::span<const int32_t>(next).subspan(*cached),
                     .start_pos = static_cast<int32_t>(seq->tokens.size() - next.size()) + *cached,
                     .block_table = seq->blocks,
                     .logits = logits.data()};
      ASSERT_TRUE((*backend)->Forward({&row, 1}).ok());
      const int32_t got = Argmax(logits);
      const json& top2 = g["top2"][step];
      const int first = top2[0][0], second = top2[1][0];
      const double llama_gap = top2[0][1].get<double>() - top2[1][1].get<double>();
      const double arbor_gap = logits[first] - logits[second];
      ++compared;
      if (got == want[step]) {
        max_gap_shift = std::max(max_gap_shift, std::abs(llama_gap - arbor_gap));
        ++identical;
        next = {got};
        continue;
      }
      // A divergence must sit on a near-tie, Arbor taking llama.cpp's runner-up.
      EXPECT_EQ(got, second) << "step " << step << ": Arbor " << got << ", llama.cpp " << first;
      EXPECT_LT(llama_gap, kNearTie) << "step " << step;
      EXPECT_LT(-arbor_gap, kNearTie) << "step " << step;
      std::cout << g["name"].get<std::string>() << ": diverges at step " << step << " of "
                << want.size() << " on a near-tie (llama.cpp prefers " << first << " by "
                << llama_gap << ", Arbor " << got << " by " << -arbor_gap << ")\n";
      break;
    }
  }
  std::cout << identical << " of " << compared << " compared greedy tokens identical; top-two "
            << "gaps differ by at most " << max_gap_shift << " between the engines there\n";
  EXPECT_GE(identical, compared * 9 / 10);
}

}  // namespace
}  // namespace arbor::worker
