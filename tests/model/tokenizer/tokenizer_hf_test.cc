// The tokenizer against Hugging Face `tokenizers` (run by the project venv's Python): a Llama 3
// style byte-level BPE trained by `tokenizers` must encode tricky and random strings to the same
// ids in Arbor (merges in both the pair and the legacy string form); the tokenizer.json written
// by Arbor's trainer must load in `tokenizers` and encode, decode and render chats identically;
// and a Llama 2 style tokenizer (normalizer + byte_fallback) must match too, as must tokenizers
// behind each Unicode normal form (NFC, NFD, NFKC, NFKD).
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "gtest/gtest.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/model/tokenizer/random_text.h"

namespace arbor::model {
namespace {

using nlohmann::json;

// Strings chosen to exercise every alternative of the Llama 3 pre-tokenizer regex and the
// added-token matcher.
std::vector<std::string> TrickyStrings() {
  return {"",
          "Hello, world!",
          "I'm sure they'll say it's fine; we'd've known. DON'T SHOUT, I'M HERE.",
          "'s 's's x's'",
          "1 12 123 1234 12345 1234567890 3.14159 1,000,000 ٣٤٥ ①②",
          "   leading spaces",
          "trailing spaces   ",
          "a  b   c    d\t\te\t \tf",
          "line one\nline two\n\nline four\r\nwindows\n\n\n   \n  indented",
          "\n",
          "   ",
          "中文字符和标点。日本語のテキスト、한국어 텍스트",
          "emoji 😀🎉👍🏽 family 👨‍👩‍👧 flag 🇯🇵 and ❤️",
          "combining e\xCC\x81 a\xCC\x88\xCC\x81 Z\xCD\x91\xCD\x95 café naïve",
          "nbsp\xC2\xA0here ideographic\xE3\x80\x80space zero\xE2\x80\x8Bwidth",
          "<|begin_of_text|>Hello<|eot_id|>",
          "text<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|> after",
          "<|eot_id|><|eot_id|> <|eot_id|>",
          "<|not_a_token|> <| eot_id |> <custom> x<custom>y",
          "Wait ... what? ... ok ...... .. .",
          "#include <vector>\nint main() { return a[i] != b->c; }  // done",
          "$x = 5; @array = (1, 2, 3); %hash{'key'} => 'value';",
          "URL https://example.com/a/b?c=1&d=2#frag email a.b@c.org",
          "ALLCAPS MixedCase camelCase snake_case kebab-case",
          "Ελληνικά Русский العربية עברית हिन्दी ไทย",
          "quux: the zebra met a tokenizer; zebra tokenizers quux"};
}

std::vector<std::string> TestStrings(unsigned seed) {
  std::vector<std::string> strings = TrickyStrings();
  std::mt19937 rng(seed);
  for (int i = 0; i < 60; ++i) {
    strings.push_back(RandomUnicodeText(rng, 12) + RandomCodePoints(rng, 8));
  }
  return strings;
}

class HuggingFaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/arbor_tokenizer_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  void WriteFile(const std::string& path, absl::string_view contents) const {
    std::ofstream out(path, std::ios::binary);
    out.write(contents.data(), contents.size());
    ASSERT_TRUE(out.good()) << path;
  }

  // Runs the reference script once and returns its response.
  json RunReference(const std::string& mode, const json& request) {
    WriteFile(Path("request.json"), request.dump());
    auto process = base::Subprocess::Start(
        {ARBOR_PYTHON,
         std::string(ARBOR_SOURCE_DIR) + "/tests/model/tokenizer/hf_tokenizer_reference.py", mode,
         Path("request.json"), Path("response.json")},
        Path("python.log"));
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return json();
    const std::optional<int> exit_code = process->Wait(absl::Seconds(120));
    auto log = base::ReadFile(Path("python.log"));
    EXPECT_EQ(exit_code, 0) << (log.ok() ? *log : "");
    auto response = base::ReadFile(Path("response.json"));
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? json::parse(*response, nullptr, false) : json();
  }

  // Compares Arbor's encodings of `strings` with the reference's.
  void ExpectSameEncodings(const Tokenizer& tokenizer, const std::vector<std::string>& strings,
                           const json& reference) {
    ASSERT_EQ(reference["ids"].size(), strings.size());
    for (size_t i = 0; i < strings.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("string ", i, ": \"", strings[i], "\""));
      EXPECT_EQ(tokenizer.Encode(strings[i], true), reference["ids"][i].get<std::vector<int>>());
      EXPECT_EQ(tokenizer.Encode(strings[i], false),
                reference["ids_plain"][i].get<std::vector<int>>());
      EXPECT_EQ(tokenizer.Decode(reference["ids"][i].get<std::vector<int>>()),
                reference["decoded"][i].get<std::string>());
    }
  }

  std::string dir_;
};

TEST_F(HuggingFaceTest, TokenizerTrainedByHuggingFaceEncodesIdentically) {
  const unsigned seed = TestSeed();
  const std::vector<std::string> strings = TestStrings(seed);
  WriteFile(Path("corpus.txt"), BuiltinCorpus());
  const json reference =
      RunReference("train_llama3", {{"corpus_path", Path("corpus.txt")},
                                    {"vocab_size", 900},
                                    {"special_tokens", Llama3SpecialTokens()},
                                    {"added_tokens", {"<custom>"}},
                                    {"extra_vocab", {"\xC4\xA0zebra", "\xC4\xA0tokenizer", "quux"}},
                                    {"pair_path", Path("pair.json")},
                                    {"string_path", Path("string.json")},
                                    {"strings", strings}});
  ASSERT_TRUE(reference.is_object());
  for (const char* file : {"pair.json", "string.json"}) {
    SCOPED_TRACE(file);
    auto tokenizer = Tokenizer::FromFile(Path(file));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    ExpectSameEncodings(**tokenizer, strings, reference);
  }
}

TEST_F(HuggingFaceTest, TrainerOutputLoadsAndEncodesIdenticallyInHuggingFace) {
  const unsigned seed = TestSeed();
  const std::vector<std::string> strings = TestStrings(seed);
  std::vector<std::string> specials = Llama3SpecialTokens();
  specials.insert(specials.end(), {"<|im_start|>", "<|im_end|>"});
  auto text = TrainByteLevelBpe(BuiltinCorpus(), {1500, specials});
  ASSERT_TRUE(text.ok()) << text.status();
  WriteFile(Path("arbor.json"), *text);
  const std::vector<std::vector<ChatMessage>> conversations = {{{"user", "Hello!"}},
                                                               {{"system", "You are terse."},
                                                                {"user", "  What's 12*12?\n"},
                                                                {"assistant", "144"},
                                                                {"user", "And 13*13 ... ?"}},
                                                               {{"user", "中文 😀 e\xCC\x81"}}};
  json conversations_json = json::array();
  for (const auto& conversation : conversations) {
    json messages = json::array();
    for (const ChatMessage& m : conversation) {
      messages.push_back({{"role", m.role}, {"content", m.content}});
    }
    conversations_json.push_back(messages);
  }
  const json reference = RunReference(
      "encode",
      {{"path", Path("arbor.json")}, {"strings", strings}, {"conversations", conversations_json}});
  ASSERT_TRUE(reference.is_object());
  auto tokenizer = Tokenizer::FromJson(*text);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  ExpectSameEncodings(**tokenizer, strings, reference);
  for (size_t i = 0; i < conversations.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("conversation ", i));
    EXPECT_EQ(ApplyChatTemplate(**tokenizer, ChatFormat::kLlama3, conversations[i], true).value(),
              reference["llama3_chat"][i].get<std::vector<int>>());
    EXPECT_EQ(ApplyChatTemplate(**tokenizer, ChatFormat::kChatML, conversations[i], true).value(),
              reference["chatml_chat"][i].get<std::vector<int>>());
  }
}

TEST_F(HuggingFaceTest, Llama2StyleTokenizerEncodesIdentically) {
  const unsigned seed = TestSeed();
  const std::vector<std::string> strings = TestStrings(seed);
  WriteFile(Path("corpus.txt"), BuiltinCorpus());
  const json reference = RunReference("train_llama2", {{"corpus_path", Path("corpus.txt")},
                                                       {"vocab_size", 900},
                                                       {"path", Path("llama2.json")},
                                                       {"strings", strings}});
  ASSERT_TRUE(reference.is_object());
  auto tokenizer = Tokenizer::FromFile(Path("llama2.json"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  ExpectSameEncodings(**tokenizer, strings, reference);
}

// Unicode normal forms (Qwen2's tokenizer.json composes with NFC): Arbor's trained tokenizer behind
// each form encodes like `tokenizers` behind the same form, on strings whose composed and
// decomposed spellings differ (combining accents, Hangul jamo, ligatures, the Angstrom sign),
// characters newer than the tables `tokenizers` normalises with (U+A7F4 and U+32FF, which ICU's
// newer tables decompose: a random string once met U+A7F4; and the marks of Unicode 10.0 and
// 11.0 after U+0301, which ICU's tables reorder: a random string once met U+07FD), and on the
// random Unicode strings.
TEST_F(HuggingFaceTest, UnicodeNormalFormsEncodeIdentically) {
  const unsigned seed = TestSeed();
  std::vector<std::string> strings = TestStrings(seed);
  for (const char* text : {"cafe\xCC\x81 na\xC3\xAFve", "\xE1\x84\x80\xE1\x85\xA1 \xEA\xB0\x80",
                           "\xEF\xAC\x81le \xE2\x84\xAB \xE2\x91\xA0 x\xC2\xB2",
                           "A\xCC\x8A\xCC\x81 o\xCC\x88\xCC\x84", "C\xEA\x9F\xB4 \xE3\x8B\xBF",
                           "e\xCC\x81\xDF\xBD e\xCC\x81\xE1\xB7\xB9 e\xCC\x81\xF0\x90\xBD\x86"}) {
    strings.push_back(text);
  }
  auto trained = TrainByteLevelBpe(BuiltinCorpus(), {900, Llama3SpecialTokens()});
  ASSERT_TRUE(trained.ok()) << trained.status();
  for (const char* form : {"NFC", "NFD", "NFKC", "NFKD"}) {
    SCOPED_TRACE(form);
    json config = json::parse(*trained);
    config["normalizer"] = {{"type", form}};
    WriteFile(Path("normal.json"), config.dump());
    const json reference = RunReference(
        "encode",
        {{"path", Path("normal.json")}, {"strings", strings}, {"conversations", json::array()}});
    ASSERT_TRUE(reference.is_object());
    auto tokenizer = Tokenizer::FromJson(config.dump());
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    ExpectSameEncodings(**tokenizer, strings, reference);
  }
}

}  // namespace
}  // namespace arbor::model
