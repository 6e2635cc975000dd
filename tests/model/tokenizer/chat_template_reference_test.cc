// The chat templates the models carry (tests/model/data/chat_templates.json: Qwen2.5's, with its
// default system message and tool branches, Qwen2's, SmolLM2's, Llama 3's, and Llama 3.1's and
// 3.2's, whose system turn opens with a knowledge date and today's date, fixed in 3.1's) are
// recognised by DetectChatTemplateText with the right format, default system message and date
// preamble, and Arbor's rendering gives, on conversations with and without a system message,
// several turns, a late system message, whitespace to trim and non-ASCII text, with and without
// the generation prompt, the ids of the text Hugging Face's apply_chat_template renders
// (tests/model/tokenizer/chat_template_reference.py: jinja2 set up as transformers sets it up);
// where the template refuses a conversation (Mistral's, on turns that do not alternate or a system
// message v0.1 does not take), Arbor refuses it too. Mistral v0.1's [INST] is text in its
// vocabulary, v0.3's a control token: each is rendered against a vocabulary of its kind.
// An unrecognised template is refused with a message naming --chat_template.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/files.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/support/python_reference.h"

namespace arbor::model {
namespace {

using nlohmann::json;

constexpr char kTemplates[] = ARBOR_SOURCE_DIR "/tests/model/data/chat_templates.json";

// role, content pairs.
using Conversation = std::vector<std::pair<std::string, std::string>>;

std::vector<Conversation> Conversations() {
  return {
      {{"user", "Hello"}},
      {{"system", "You are terse."}, {"user", "Why is the sky blue?"}},
      {{"user", "My name is Ada."},
       {"assistant", "Nice to meet you, Ada!"},
       {"user", "What is my name?"}},
      {{"system", "Be kind."},
       {"user", "  spaced out  \n"},
       {"assistant", "\nok\n"},
       {"user", "emoji 🙂 and ünïcode, 1234"}},
      {{"user", "first"}, {"system", "a late system message"}, {"user", "second"}},
      {{"user", "question"}, {"assistant", "answer"}},
  };
}

class ChatTemplateReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Vocabularies with the control tokens of every template, [INST] and [/INST] among them or
    // not.
    std::vector<std::string> specials = {"<|begin_of_text|>",
                                         "<|start_header_id|>",
                                         "<|end_header_id|>",
                                         "<|eot_id|>",
                                         "<|im_start|>",
                                         "<|im_end|>",
                                         "<s>",
                                         "</s>"};
    for (const bool inst_special : {false, true}) {
      if (inst_special) specials.insert(specials.end(), {"[INST]", "[/INST]"});
      auto trained = TrainByteLevelBpe(BuiltinCorpus(), {800, specials});
      ASSERT_TRUE(trained.ok()) << trained.status();
      auto tokenizer = Tokenizer::FromJson(*trained);
      ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
      (inst_special ? tokenizer_ : inst_text_tokenizer_) = std::move(tokenizer).value().release();
    }
    auto text = base::ReadFile(kTemplates);
    ASSERT_TRUE(text.ok()) << text.status();
    templates_ = new json(json::parse(*text));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete inst_text_tokenizer_;
    delete templates_;
  }

  static inline const Tokenizer* tokenizer_ = nullptr;
  static inline const Tokenizer* inst_text_tokenizer_ = nullptr;  // [INST] is text.
  static inline json* templates_ = nullptr;
};

TEST_F(ChatTemplateReferenceTest, RecognisesFormatAndDefaultSystem) {
  ASSERT_EQ((*templates_)["templates"].size(), 9u);
  for (const json& t : (*templates_)["templates"]) {
    SCOPED_TRACE(t["name"].get<std::string>());
    absl::StatusOr<ChatTemplate> detected = DetectChatTemplateText(t["template"]);
    ASSERT_TRUE(detected.ok()) << detected.status();
    EXPECT_EQ(ChatTemplateName(detected->format), t["format"].get<std::string>());
    EXPECT_EQ(detected->default_system, t["default_system"].get<std::string>());
    EXPECT_EQ(detected->knowledge_date_preamble, t["knowledge_date_preamble"].get<bool>());
    EXPECT_EQ(detected->preamble_date, t["preamble_date"].get<std::string>());
    EXPECT_EQ(detected->legacy_mistral, t["legacy_mistral"].get<bool>());
    EXPECT_EQ(detected->mistral_trims_answers, t["trims_answers"].get<bool>());
  }
}

TEST_F(ChatTemplateReferenceTest, RendersAsHuggingFaceDoes) {
  int compared = 0, refused = 0;
  for (const json& t : (*templates_)["templates"]) {
    SCOPED_TRACE(t["name"].get<std::string>());
    json request = {{"template", t["template"]},
                    {"bos_token", t["bos_token"]},
                    {"eos_token", t["eos_token"]},
                    {"cases", json::array()}};
    std::vector<std::pair<const Conversation*, bool>> cases;
    const std::vector<Conversation> conversations = Conversations();
    for (const Conversation& conversation : conversations) {
      for (bool generation_prompt : {true, false}) {
        json messages = json::array();
        for (const auto& [role, content] : conversation) {
          messages.push_back({{"role", role}, {"content", content}});
        }
        request["cases"].push_back(
            {{"messages", messages}, {"add_generation_prompt", generation_prompt}});
        cases.emplace_back(&conversation, generation_prompt);
      }
    }
    const json answer = arbor::testing::RunPythonReference(
        "tests/model/tokenizer/chat_template_reference.py", request, absl::Seconds(60));
    ASSERT_TRUE(answer.is_object() && answer.contains("rendered"));
    const ChatTemplate chat_template = *DetectChatTemplateText(t["template"]);
    const Tokenizer& tokenizer = t["inst_tokens"] == "text" ? *inst_text_tokenizer_ : *tokenizer_;
    for (size_t i = 0; i < cases.size(); ++i) {
      std::vector<ChatMessage> messages;
      for (const auto& [role, content] : *cases[i].first) messages.push_back({role, content});
      absl::StatusOr<std::vector<int>> got =
          ApplyChatTemplate(tokenizer, chat_template, messages, cases[i].second);
      if (answer["rendered"][i].is_null()) {
        EXPECT_FALSE(got.ok()) << "case " << i << ": the template refuses it, Arbor renders "
                               << tokenizer.Decode(*got);
        ++refused;
        continue;
      }
      ASSERT_TRUE(got.ok()) << "case " << i << ": " << got.status();
      const std::string want = answer["rendered"][i];
      EXPECT_EQ(*got, tokenizer.Encode(want, /*parse_special=*/true))
          << "case " << i << ", Hugging Face renders:\n"
          << want << "\nArbor renders:\n"
          << tokenizer.Decode(*got);
      ++compared;
    }
  }
  EXPECT_EQ(compared + refused, 9 * 12);
  EXPECT_GE(refused, 4);
}

TEST(ChatTemplate, UnrecognisedTemplateNamesTheFlag) {
  absl::StatusOr<ChatTemplate> detected = DetectChatTemplateText(
      "{{ bos_token }}{% for message in messages %}<start_of_turn>{{ message['role'] }}\n"
      "{{ message['content'] }}<end_of_turn>\n{% endfor %}");
  ASSERT_FALSE(detected.ok());
  EXPECT_THAT(
      std::string(detected.status().message()),
      ::testing::HasSubstr("choose one with --chat_template NAME (llama3, chatml or mistral)"));
  // What the worker's start-up line says of it, and of recognised templates.
  EXPECT_THAT(DescribeChatTemplate(detected),
              ::testing::AllOf(::testing::StartsWith("none (unrecognised chat_template"),
                               ::testing::EndsWith("; chat prompts are refused)")));
  EXPECT_EQ(DescribeChatTemplate(ChatTemplate(ChatFormat::kLlama3)), "llama3");
  ChatTemplate llama32(ChatFormat::kLlama3);
  llama32.knowledge_date_preamble = true;
  EXPECT_EQ(DescribeChatTemplate(llama32),
            "llama3 (knowledge-date system turn, dated the day of rendering)");
  EXPECT_EQ(DescribeChatTemplate(ChatTemplate(ChatFormat::kChatML, "Be brief.")),
            "chatml (default system message: \"Be brief.\")");
}

}  // namespace
}  // namespace arbor::model
