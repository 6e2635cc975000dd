// The tokenizer and chat template rebuilt from GGUF metadata: a byte-level BPE trained here and
// stored as llama.cpp stores one (tokens, merges, token types, the `llama-bpe` pre-tokenizer)
// encodes every line of the built-in corpus exactly as the tokenizer.json it came from; control
// tokens are special; BOS follows add_bos_token; unknown pre-tokenizers and tokenizer models are
// refused by name; `qwen2` cuts words as Qwen2.5's tokenizer.json does; SmolLM2's chat template
// is recognised with its default system message, and a named template overrides the file's.
#include "model/tokenizer/gguf_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_split.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "model/tokenizer/bpe_trainer.h"
#include "nlohmann/json.hpp"
#include "tests/model/gguf_builder.h"

namespace arbor::model {
namespace {

using testing::GgufBuilder;
using ::testing::HasSubstr;

// SmolLM2-135M-Instruct's template, as its GGUF file carries it.
constexpr char kSmolLM2Template[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

class GgufTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    json_ = nlohmann::json::parse(
        TrainByteLevelBpe(BuiltinCorpus(),
                          {700, {"<|begin_of_text|>", "<|im_start|>", "<|im_end|>"}})
            .value());
    const auto& vocab = json_["model"]["vocab"];
    tokens_.resize(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) tokens_[it.value()] = it.key();
    for (const auto& added : json_["added_tokens"]) {
      const size_t id = added["id"];
      if (id >= tokens_.size()) tokens_.resize(id + 1);
      tokens_[id] = added["content"];
      control_.push_back(static_cast<int>(id));
    }
    for (const auto& merge : json_["model"]["merges"]) {
      merges_.push_back(merge.is_string()
                            ? merge.get<std::string>()
                            : merge[0].get<std::string>() + " " + merge[1].get<std::string>());
    }
  }

  GgufBuilder File(const std::string& pre, bool add_bos) const {
    std::vector<int32_t> types(tokens_.size(), 1);
    for (int id : control_) types[id] = 3;
    GgufBuilder b;
    b.String("tokenizer.ggml.model", "gpt2").String("tokenizer.ggml.pre", pre);
    b.Strings("tokenizer.ggml.tokens", tokens_).Strings("tokenizer.ggml.merges", merges_);
    b.I32s("tokenizer.ggml.token_type", types).Bool("tokenizer.ggml.add_bos_token", add_bos);
    b.U32("tokenizer.ggml.bos_token_id", control_[0]);
    b.String("tokenizer.chat_template", kSmolLM2Template);
    return b;
  }

  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& bytes) {
    ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Parse(bytes, "tok.gguf"));
    return TokenizerFromGguf(*file);
  }

  nlohmann::json json_;
  std::vector<std::string> tokens_, merges_;
  std::vector<int> control_;
};

TEST_F(GgufTokenizerTest, EncodesLikeTheTokenizerJsonItCameFrom) {
  auto want = Tokenizer::FromJson(json_.dump());
  ASSERT_TRUE(want.ok()) << want.status();
  const std::string bytes = File("llama-bpe", /*add_bos=*/false).Build();
  auto got = Load(bytes);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->vocab_size(), (*want)->vocab_size());
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(BuiltinCorpus(), '\n')) {
    const std::string text(line);
    ASSERT_EQ((*got)->Encode(text), (*want)->Encode(text)) << text;
    ASSERT_EQ((*got)->Decode((*got)->Encode(text)), text);
    ++lines;
  }
  EXPECT_GT(lines, 100);
  const std::string chat = "<|im_start|>user\nhi<|im_end|>";
  EXPECT_EQ((*got)->Encode(chat), (*want)->Encode(chat));
  EXPECT_TRUE((*got)->IsSpecial(control_[1]));
  EXPECT_TRUE((*got)->prefix_tokens().empty());
}

// `qwen2` encodes as the same vocabulary does behind the Split regex of Qwen2.5's own
// tokenizer.json (Llama 3's words, every digit apart).
TEST_F(GgufTokenizerTest, Qwen2PreTokenizerMatchesQwensTokenizerJson) {
  nlohmann::json qwen = json_;
  qwen["pre_tokenizer"] = nlohmann::json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex":
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false,
       "use_regex": false}]})");
  auto want = Tokenizer::FromJson(qwen.dump());
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = Load(File("qwen2", /*add_bos=*/false).Build());
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<std::string> texts = absl::StrSplit(BuiltinCorpus(), '\n');
  texts.push_back("In 2024, 12345 people said   \"don't\" and IT'S 3.14159!\n\n  x\ty");
  for (const std::string& text : texts) {
    ASSERT_EQ((*got)->Encode(text), (*want)->Encode(text)) << text;
  }
  EXPECT_EQ((*got)->Encode("2024").size(), 4u);  // Where llama-bpe keeps "202" together.
}

TEST_F(GgufTokenizerTest, AddBosTokenPutsBosFirst) {
  auto got = Load(File("smollm", /*add_bos=*/true).Build());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->prefix_tokens(), std::vector<int>{control_[0]});
}

TEST_F(GgufTokenizerTest, PreTokenizersByName) {
  // smollm cuts every digit apart; llama-bpe keeps runs of up to three.
  auto smollm = Load(File("smollm", false).Build());
  auto llama = Load(File("llama-bpe", false).Build());
  ASSERT_TRUE(smollm.ok() && llama.ok());
  EXPECT_EQ((*smollm)->Encode("2024").size(), 4u);
  EXPECT_LT((*llama)->Encode("2024").size(), 4u);
  for (const char* pre : {"gpt2", "default", "starcoder"}) {
    EXPECT_TRUE(Load(File(pre, false).Build()).ok()) << pre;
  }
  EXPECT_THAT(std::string(Load(File("qwen35", false).Build()).status().message()),
              HasSubstr("tokenizer.ggml.pre = 'qwen35' is a pre-tokenizer Arbor does not know"));
  GgufBuilder rwkv;
  rwkv.String("tokenizer.ggml.model", "rwkv");
  EXPECT_THAT(std::string(Load(rwkv.Build()).status().message()),
              HasSubstr("tokenizer.ggml.model = 'rwkv' is not supported"));
}

TEST_F(GgufTokenizerTest, ChatTemplateWithDefaultSystemMessage) {
  const std::string bytes = File("smollm", false).Build();
  auto file = GgufFile::Parse(bytes, "tok.gguf");
  ASSERT_TRUE(file.ok());
  absl::StatusOr<ChatTemplate> chat = ChatTemplateFromGguf(**file);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(chat->format, ChatFormat::kChatML);
  EXPECT_EQ(chat->default_system,
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  auto tokenizer = TokenizerFromGguf(**file);
  ASSERT_TRUE(tokenizer.ok());
  auto ids = ApplyChatTemplate(**tokenizer, *chat, {{"user", "Hi"}}, true);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, (*tokenizer)
                      ->Encode("<|im_start|>system\nYou are a helpful AI assistant named "
                               "SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>"
                               "user\nHi<|im_end|>\n<|im_start|>assistant\n"));
  // A conversation with its own system message gets no default.
  auto own = ApplyChatTemplate(**tokenizer, *chat, {{"system", "Be brief."}, {"user", "Hi"}}, true);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(*own, (*tokenizer)
                      ->Encode("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>"
                               "user\nHi<|im_end|>\n<|im_start|>assistant\n"));
}

TEST_F(GgufTokenizerTest, LoadModelTokenizerReadsAFile) {
  const std::string path = ::testing::TempDir() + "/tok-" + std::to_string(getpid()) + ".gguf";
  ASSERT_TRUE(base::WriteFileAtomically(path, File("smollm", false).Build()).ok());
  absl::StatusOr<ModelTokenizer> loaded = LoadModelTokenizer(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->chat_template.ok());
  EXPECT_GT(loaded->tokenizer->vocab_size(), 600);
  // --chat_template chooses the format and keeps the file's default system message; an unknown
  // name fails the load.
  absl::StatusOr<ModelTokenizer> forced = LoadModelTokenizer(path, "llama3");
  ASSERT_TRUE(forced.ok()) << forced.status();
  ASSERT_TRUE(forced->chat_template.ok());
  EXPECT_EQ(forced->chat_template->format, ChatFormat::kLlama3);
  EXPECT_EQ(forced->chat_template->default_system, loaded->chat_template->default_system);
  EXPECT_THAT(std::string(LoadModelTokenizer(path, "gemma").status().message()),
              HasSubstr("unknown chat template 'gemma'"));
  std::filesystem::remove(path);
  EXPECT_FALSE(LoadModelTokenizer(path).ok());
}

}  // namespace
}  // namespace arbor::model
