// Unit tests of the tokenizer on a tokenizer trained in-process by the BPE trainer: encode
// against a naive quadratic BPE written here, byte-exact round trips on random Unicode and
// invalid bytes, pre-tokenizer cuts, added/special token matching, streaming decode, chat
// templates, and the error for each malformed tokenizer.json.
#include "model/tokenizer/tokenizer.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/byte_level.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/incremental_decoder.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "nlohmann/json.hpp"
#include "tests/model/tokenizer/random_text.h"

namespace arbor::model {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kVocabSize = 1000;

class TrainedTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<std::string> specials = Llama3SpecialTokens();
    specials.push_back("<custom>");
    auto json_text = TrainByteLevelBpe(BuiltinCorpus(), {kVocabSize, specials});
    ASSERT_TRUE(json_text.ok()) << json_text.status();
    // "<custom>" becomes a plain (non-special) added token.
    json root = json::parse(*json_text);
    root["added_tokens"].back()["special"] = false;
    json_ = new std::string(root.dump());
    auto tokenizer = Tokenizer::FromJson(*json_);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = tokenizer->release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete json_;
  }
  int Id(const std::string& token) const {
    auto id = tokenizer_->TokenId(token);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : -1;
  }

  static std::string* json_;
  static Tokenizer* tokenizer_;
};
std::string* TrainedTokenizerTest::json_ = nullptr;
Tokenizer* TrainedTokenizerTest::tokenizer_ = nullptr;

// The textbook algorithm, independent of the tokenizer's heap-based merge: repeatedly merge the
// adjacent pair of lowest rank (leftmost on ties), on each pre-tokenized word.
std::vector<int> NaiveEncode(const std::string& tokenizer_json, const std::string& text) {
  const json root = json::parse(tokenizer_json);
  absl::flat_hash_map<std::string, int> vocab;
  for (const auto& [token, id] : root["model"]["vocab"].items()) vocab[token] = id.get<int>();
  absl::flat_hash_map<std::string, int> rank;
  const json& merges = root["model"]["merges"];
  for (size_t i = 0; i < merges.size(); ++i) {
    rank[merges[i][0].get<std::string>() + " " + merges[i][1].get<std::string>()] = i;
  }
  std::vector<int> ids;
  PreTokenizer::Llama3().Split(text, [&](absl::string_view word) {
    std::string mapped;
    AppendByteLevel(word, &mapped);
    if (vocab.contains(mapped)) {  // ignore_merges
      ids.push_back(vocab[mapped]);
      return;
    }
    std::vector<std::string> symbols;
    for (char c : word) symbols.emplace_back(ByteLevelChar(static_cast<unsigned char>(c)));
    while (symbols.size() > 1) {
      int best = -1;
      int best_rank = 0;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        auto it = rank.find(symbols[i] + " " + symbols[i + 1]);
        if (it != rank.end() && (best < 0 || it->second < best_rank)) {
          best = i;
          best_rank = it->second;
        }
      }
      if (best < 0) break;
      symbols[best] += symbols[best + 1];
      symbols.erase(symbols.begin() + best + 1);
    }
    for (const std::string& symbol : symbols) ids.push_back(vocab.at(symbol));
  });
  return ids;
}

TEST(Utf8Test, ReplacesMaximalSubpartsAsTheUnicodeStandard) {
  // Unicode 15, section 3.9, Table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
  const std::string bytes = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(ToValidUtf8(bytes), "a" + fffd + fffd + fffd + "b" + fffd + "c" + fffd + fffd + "d");
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), fffd + fffd + fffd);  // A surrogate.
  EXPECT_EQ(ToValidUtf8("\xF0\x9F\x98"), fffd);                // Truncated emoji.
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));                       // Overlong '/'.
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
}

TEST(ByteLevelTest, AlphabetIsABijectionOnBytes) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string mapped;
  AppendByteLevel(all, &mapped);
  EXPECT_EQ(FromByteLevel(mapped), all);
  EXPECT_EQ(ByteLevelChar(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(ByteLevelChar('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(ByteLevelChar('A'), "A");
  EXPECT_EQ(FromByteLevel("a b"), std::nullopt);  // A raw space is outside the alphabet.
}

std::vector<std::string> Llama3Split(absl::string_view text) {
  std::vector<std::string> pieces;
  PreTokenizer::Llama3().Split(text, [&](absl::string_view p) { pieces.emplace_back(p); });
  return pieces;
}

TEST(PreTokenizerTest, Llama3PatternCutsLikeTheReference) {
  EXPECT_THAT(Llama3Split("I'm here, they'LL go"),
              ElementsAre("I", "'m", " here", ",", " they", "'LL", " go"));
  EXPECT_THAT(Llama3Split("1234567 x"), ElementsAre("123", "456", "7", " x"));
  EXPECT_THAT(Llama3Split("hello   world"), ElementsAre("hello", "  ", " world"));
  EXPECT_THAT(Llama3Split("a\n\n  b"), ElementsAre("a", "\n\n", " ", " b"));
  EXPECT_THAT(Llama3Split("end.\n\nNext ..."), ElementsAre("end", ".\n\n", "Next", " ..."));
  EXPECT_THAT(Llama3Split("中文abc"), ElementsAre("中文abc"));
  EXPECT_THAT(Llama3Split("x  "), ElementsAre("x", "  "));
  // Invalid bytes never match the pattern: they become pieces of their own.
  EXPECT_THAT(Llama3Split("ab\xFF\xFE"
                          "cd"),
              ElementsAre("ab", "\xFF\xFE", "cd"));
}

TEST_F(TrainedTokenizerTest, VocabularyLayout) {
  EXPECT_EQ(tokenizer_->vocab_size(), kVocabSize);
  const int first_special = kVocabSize - static_cast<int>(Llama3SpecialTokens().size()) - 1;
  EXPECT_EQ(Id("<|begin_of_text|>"), first_special);
  EXPECT_TRUE(tokenizer_->IsSpecial(Id("<|eot_id|>")));
  EXPECT_FALSE(tokenizer_->IsSpecial(Id("\xC4\xA0the")));  // "Ġthe"
  EXPECT_THAT(tokenizer_->prefix_tokens(), ElementsAre(Id("<|begin_of_text|>")));
  EXPECT_EQ(tokenizer_->TokenText(Id("<|eot_id|>")), "<|eot_id|>");
  EXPECT_THAT(tokenizer_->Encode(" ..."), ElementsAre(Id("\xC4\xA0...")));
  EXPECT_FALSE(tokenizer_->TokenId("no such token").ok());
  EXPECT_EQ(tokenizer_->Decode({-1, kVocabSize, 1 << 30}), "");
}

TEST_F(TrainedTokenizerTest, EncodeMatchesNaiveBpe) {
  std::mt19937 rng(TestSeed());
  std::string text(BuiltinCorpus().substr(0, 3000));
  for (int i = 0; i < 50; ++i) text += RandomUnicodeText(rng, 12) + RandomCodePoints(rng, 6);
  // The naive reference knows no added tokens; the non-special one would be matched.
  text = absl::StrReplaceAll(text, {{"<custom>", "<cust>"}});
  EXPECT_EQ(tokenizer_->Encode(text, /*parse_special=*/false), NaiveEncode(*json_, text));
}

// More fresh words than the word cache holds (it is dropped and refilled several times, issue
// 16): every encoding stays what a fresh tokenizer gives.
TEST_F(TrainedTokenizerTest, EncodingPastTheWordCacheBoundStaysExact) {
  auto fresh = Tokenizer::FromJson(*json_);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  std::string text;
  for (int i = 0; i < 120000; ++i) absl::StrAppend(&text, " w", i * 7919, "x");
  const std::vector<int> first = tokenizer_->Encode(text, /*parse_special=*/false);
  EXPECT_EQ(tokenizer_->Encode(text, /*parse_special=*/false), first);
  const std::string probe = " w15838x w0x the";
  EXPECT_EQ(tokenizer_->Encode(probe, false), (*fresh)->Encode(probe, false));
}

TEST_F(TrainedTokenizerTest, DecodeInvertsEncodeOnAnyBytes) {
  std::mt19937 rng(TestSeed());
  for (int i = 0; i < 300; ++i) {
    std::string text = RandomUnicodeText(rng, 10) + RandomCodePoints(rng, 10);
    if (i % 3 == 0) text += RandomBytes(rng, 12) + RandomUnicodeText(rng, 3);
    for (bool parse_special : {true, false}) {
      ASSERT_EQ(tokenizer_->Decode(tokenizer_->Encode(text, parse_special)), text)
          << "parse_special=" << parse_special;
    }
  }
  EXPECT_EQ(tokenizer_->Decode(tokenizer_->Encode("")), "");
}

TEST_F(TrainedTokenizerTest, SpecialTokensSplitTheText) {
  const std::string left = "Hello there";
  const std::string right = " general";
  std::vector<int> expected = tokenizer_->Encode(left);
  expected.push_back(Id("<|eot_id|>"));
  for (int id : tokenizer_->Encode(right)) expected.push_back(id);
  EXPECT_EQ(tokenizer_->Encode(left + "<|eot_id|>" + right), expected);
  // As plain text the special token is spelled with ordinary tokens.
  const std::vector<int> plain = tokenizer_->Encode(left + "<|eot_id|>" + right, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), Id("<|eot_id|>")), 0);
  EXPECT_EQ(tokenizer_->Decode(plain), left + "<|eot_id|>" + right);
  // A non-special added token is matched either way; the longest match wins.
  EXPECT_THAT(tokenizer_->Encode("<custom>", false), ElementsAre(Id("<custom>")));
  EXPECT_THAT(tokenizer_->Encode("<|eot_id|><|eot_id|>"),
              ElementsAre(Id("<|eot_id|>"), Id("<|eot_id|>")));
}

TEST_F(TrainedTokenizerTest, IncrementalDecoderNeverEmitsBrokenUtf8) {
  std::mt19937 rng(TestSeed());
  std::uniform_int_distribution<int> any_id(-2, kVocabSize + 1);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int> ids;
    if (trial % 2 == 0) {
      ids = tokenizer_->Encode(RandomUnicodeText(rng, 15) + RandomCodePoints(rng, 8));
    } else {
      for (int i = 0; i < 30; ++i) ids.push_back(any_id(rng));
    }
    for (bool skip_special : {false, true}) {
      IncrementalDecoder decoder(*tokenizer_, skip_special);
      std::string streamed;
      for (int id : ids) {
        const std::string piece = decoder.Push(id);
        ASSERT_TRUE(IsValidUtf8(piece));
        streamed += piece;
      }
      const std::string tail = decoder.Flush();
      ASSERT_TRUE(IsValidUtf8(tail));
      streamed += tail;
      std::vector<int> kept;
      for (int id : ids) {
        if (!(skip_special && tokenizer_->IsSpecial(id))) kept.push_back(id);
      }
      const std::string decoded = tokenizer_->Decode(kept);
      ASSERT_EQ(streamed, ToValidUtf8(decoded));
      if (trial % 2 == 0 && !skip_special) {
        ASSERT_EQ(streamed, decoded);
      }
    }
  }
}

TEST_F(TrainedTokenizerTest, IncrementalDecoderHoldsSplitCharacters) {
  // "🦀" (4 bytes) is not in the training corpus, so its bytes span several tokens; it must come
  // out whole, in one piece, once its last byte arrives.
  const std::string crab = "\xF0\x9F\xA6\x80";
  const std::vector<int> ids = tokenizer_->Encode("a" + crab + crab + "!");
  ASSERT_GT(ids.size(), 4u);
  IncrementalDecoder decoder(*tokenizer_);
  std::string streamed;
  for (int id : ids) {
    const std::string piece = decoder.Push(id);
    EXPECT_TRUE(piece.empty() || piece == "a" || piece == crab || piece == crab + "!" ||
                piece == "!" || piece == "a" + crab)
        << "piece of " << piece.size() << " bytes";
    streamed += piece;
  }
  EXPECT_EQ(decoder.Flush(), "");
  EXPECT_EQ(streamed, "a" + crab + crab + "!");
  // An unfinished character is flushed as one replacement character.
  IncrementalDecoder truncated(*tokenizer_);
  EXPECT_EQ(truncated.Push(ids[1]), "");
  EXPECT_EQ(truncated.Flush(), "\xEF\xBF\xBD");
}

TEST_F(TrainedTokenizerTest, ChatTemplatesMatchRenderedText) {
  const std::vector<ChatMessage> messages = {
      {"system", "Be brief."}, {"user", "  What's 2+2? <|eot_id|>\n"}, {"assistant", "4"}};
  auto llama3 = ApplyChatTemplate(*tokenizer_, ChatFormat::kLlama3, messages, true);
  ASSERT_TRUE(llama3.ok()) << llama3.status();
  // The rendered text, encoded with specials parsed — except the one inside user content,
  // which the template must keep as text.
  std::vector<int> expected = tokenizer_->Encode(
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>");
  for (int id : tokenizer_->Encode("\n\nWhat's 2+2? <|eot_id|>", false)) expected.push_back(id);
  for (int id : tokenizer_->Encode("<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
                                   "4<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
                                   "\n\n")) {
    expected.push_back(id);
  }
  EXPECT_EQ(*llama3, expected);

  auto without_prompt = ApplyChatTemplate(*tokenizer_, ChatFormat::kLlama3, messages, false);
  ASSERT_TRUE(without_prompt.ok());
  EXPECT_EQ(without_prompt->back(), Id("<|eot_id|>"));

  auto chatml = ApplyChatTemplate(*tokenizer_, ChatFormat::kChatML, messages, true);
  EXPECT_FALSE(chatml.ok());
  EXPECT_THAT(chatml.status().message(), HasSubstr("<|im_start|>"));
}

TEST(ChatTemplateTest, ChatMLWithItsSpecialTokens) {
  auto text = TrainByteLevelBpe(BuiltinCorpus(), {600, {"<|im_start|>", "<|im_end|>"}});
  ASSERT_TRUE(text.ok()) << text.status();
  auto tokenizer = Tokenizer::FromJson(*text);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto ids = ApplyChatTemplate(**tokenizer, ChatFormat::kChatML,
                               {{"user", "Hi there"}, {"assistant", "Hello!"}}, true);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, (*tokenizer)
                      ->Encode("<|im_start|>user\nHi there<|im_end|>\n<|im_start|>"
                               "assistant\nHello!<|im_end|>\n<|im_start|>assistant\n"));
  EXPECT_TRUE((*tokenizer)->prefix_tokens().empty());
  EXPECT_FALSE(ApplyChatTemplate(**tokenizer, ChatFormat::kLlama3, {}, true).ok());
}

TEST(ChatTemplateTest, DetectsTemplatesFromTokenizerConfig) {
  EXPECT_EQ(DetectChatTemplate(json{{"chat_template", Llama3ChatTemplate()}}.dump()).value().format,
            ChatFormat::kLlama3);
  EXPECT_EQ(DetectChatTemplate(json{{"chat_template", ChatMLChatTemplate()}}.dump()).value().format,
            ChatFormat::kChatML);
  const json list = {
      {"chat_template", json::array({{{"name", "tool_use"}, {"template", "x"}},
                                     {{"name", "default"}, {"template", ChatMLChatTemplate()}}})}};
  EXPECT_EQ(DetectChatTemplate(list.dump()).value().format, ChatFormat::kChatML);
  auto unknown = DetectChatTemplate(R"({"chat_template": "### Human: {{ message }} ### Bot:"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("### Human: {{ message }}"));
  EXPECT_EQ(DetectChatTemplate(R"({"chat_template": "[INST] {{ message }} [/INST]"})")->format,
            ChatFormat::kMistral);
  EXPECT_EQ(DetectChatTemplate("{}").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(DetectChatTemplate("{not json").ok());
  EXPECT_EQ(ParseChatTemplateName("Llama3").value(), ChatFormat::kLlama3);
  EXPECT_EQ(ParseChatTemplateName("chatml").value(), ChatFormat::kChatML);
  EXPECT_EQ(ParseChatTemplateName("Mistral").value(), ChatFormat::kMistral);
  EXPECT_THAT(ParseChatTemplateName("vicuna").status().message(), HasSubstr("vicuna"));
  EXPECT_EQ(ParseChatTemplateName(ChatTemplateName(ChatFormat::kChatML)).value(),
            ChatFormat::kChatML);
}

TEST(BpeTrainerTest, IsDeterministicAndValidatesOptions) {
  EXPECT_EQ(TrainByteLevelBpe(BuiltinCorpus(), {400, {"<s>"}}).value(),
            TrainByteLevelBpe(BuiltinCorpus(), {400, {"<s>"}}).value());
  EXPECT_THAT(TrainByteLevelBpe("abc", {100, {}}).status().message(), HasSubstr("vocab_size"));
  EXPECT_THAT(TrainByteLevelBpe("abc", {300, {"<s>", "<s>"}}).status().message(),
              HasSubstr("'<s>'"));
  // A tiny corpus runs out of pairs: the vocabulary stops short of the request.
  auto small = Tokenizer::FromJson(TrainByteLevelBpe("abab abab", {1000, {"<s>"}}).value());
  ASSERT_TRUE(small.ok());
  EXPECT_LT((*small)->vocab_size(), 270);
  EXPECT_GT(BuiltinCorpus().size(), 20000u);
}

// Applies `edit` to a valid tokenizer.json and returns the load error.
std::string LoadError(const std::function<void(json&)>& edit) {
  json root = json::parse(TrainByteLevelBpe("hello world hello", {300, {"<s>"}}).value());
  edit(root);
  auto tokenizer = Tokenizer::FromJson(root.dump());
  return tokenizer.ok() ? "loaded" : std::string(tokenizer.status().message());
}

// SmolLM2's byte-level vocabulary lacks some control bytes: such a byte is dropped and no merge
// crosses it, as llama.cpp and Hugging Face `tokenizers` do.
TEST(TokenizerJsonTest, ByteLevelVocabularyMayLackAByte) {
  json root = json::parse(TrainByteLevelBpe("hello world hello", {300, {"<s>"}}).value());
  root["model"]["vocab"].erase("A");
  auto tokenizer = Tokenizer::FromJson(root.dump());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::vector<int> want = (*tokenizer)->Encode("h");
  for (int id : (*tokenizer)->Encode("llo")) want.push_back(id);
  EXPECT_EQ((*tokenizer)->Encode("hAllo"), want);
  EXPECT_EQ((*tokenizer)->Decode((*tokenizer)->Encode("hAllo")), "hllo");
}

TEST(TokenizerJsonTest, MalformedInputsGiveSpecificErrors) {
  EXPECT_THAT(std::string(Tokenizer::FromJson("{").status().message()),
              HasSubstr("not valid JSON"));
  EXPECT_THAT(std::string(Tokenizer::FromJson("[]").status().message()), HasSubstr("object"));
  EXPECT_THAT(LoadError([](json& j) { j.erase("model"); }), HasSubstr("\"model\""));
  EXPECT_THAT(LoadError([](json& j) { j["model"]["type"] = "Unigram"; }),
              HasSubstr("unsupported tokenizer: model.type \"Unigram\""));
  EXPECT_THAT(LoadError([](json& j) { j["model"]["merges"].push_back("zz qq"); }),
              HasSubstr("is not in model.vocab"));
  EXPECT_THAT(LoadError([](json& j) { j["model"]["merges"][0] = "a b c"; }),
              HasSubstr("model.merges[0]"));
  EXPECT_THAT(LoadError([](json& j) { j["model"]["vocab"]["!"] = -4; }),
              HasSubstr("model.vocab[\"!\"]"));
  EXPECT_THAT(LoadError([](json& j) {
                j["normalizer"] = {{"type", "Lowercase"}};
              }),
              HasSubstr("unsupported tokenizer: normalizer of type 'Lowercase'"));
  EXPECT_THAT(LoadError([](json& j) {
                j["pre_tokenizer"] = {{"type", "Whitespace"}};
              }),
              HasSubstr("unsupported tokenizer: pre_tokenizer of type 'Whitespace'"));
  EXPECT_THAT(LoadError([](json& j) {
                j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
              }),
              HasSubstr("does not compile"));
  EXPECT_THAT(LoadError([](json& j) {
                j["decoder"] = {{"type", "WordPiece"}};
              }),
              HasSubstr("unsupported tokenizer: decoder step of type 'WordPiece'"));
  // Fields of another JSON type are refused, not thrown.
  EXPECT_THAT(LoadError([](json& j) {
                j["decoder"] = {{"type", "Strip"}, {"content", 5}, {"start", "1"}, {"stop", 0}};
              }),
              HasSubstr("unsupported tokenizer: decoder step of type 'Strip'"));
  EXPECT_THAT(LoadError([](json& j) { j["added_tokens"][0]["id"] = "x"; }),
              HasSubstr("added_tokens[0].id"));
  EXPECT_THAT(LoadError([](json& j) { j["added_tokens"][0]["id"] = 0; }),
              HasSubstr("id 0 is both"));
  EXPECT_THAT(LoadError([](json& j) { j["model"]["dropout"] = 0.1; }), HasSubstr("dropout"));
  EXPECT_EQ(LoadError([](json& j) {
              // Merges in the legacy "a b" string form load too.
              for (json& merge : j["model"]["merges"]) {
                merge = merge[0].get<std::string>() + " " + merge[1].get<std::string>();
              }
            }),
            "loaded");
}

TEST(TokenizerJsonTest, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  // "abc" is a token the merges cannot build ("a b" first leaves "ab", "c").
  json root = json::parse(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3,
      "bc": 4, "abc": 5}, "merges": ["a b", ["b", "c"]]}, "decoder": {"type": "Fuse"}})");
  EXPECT_THAT(Tokenizer::FromJson(root.dump()).value()->Encode("abc"), ElementsAre(3, 2));
  root["model"]["ignore_merges"] = true;
  auto tokenizer = Tokenizer::FromJson(root.dump()).value();
  EXPECT_THAT(tokenizer->Encode("abc"), ElementsAre(5));
  EXPECT_EQ(tokenizer->Decode({5, 3}), "abcab");
}

TEST(TokenizerJsonTest, FromFileNamesTheFile) {
  auto missing = Tokenizer::FromFile("/nonexistent/tokenizer.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/tokenizer.json"));
}

}  // namespace
}  // namespace arbor::model
