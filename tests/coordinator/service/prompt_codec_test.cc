// The coordinator's prompts over real make-model checkpoints: the chat template recognised from
// the file, or chosen by --chat_template whatever the file carries.
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/service/prompt.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/make_model.h"

namespace arbor::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class PromptCodecTest : public ::testing::Test {
 protected:
  std::string Model(const std::string& preset) {
    const std::string dir =
        absl::StrCat(std::filesystem::temp_directory_path().string(), "/prompt-codec-",
                     ::testing::UnitTest::GetInstance()->current_test_info()->name(), "-", preset);
    model::MakeModelOptions options;
    options.preset = preset;
    options.out_dir = dir;
    EXPECT_TRUE(model::MakeModel(options).ok());
    dirs_.push_back(dir);
    return dir;
  }
  ~PromptCodecTest() override {
    for (const std::string& dir : dirs_) std::filesystem::remove_all(dir);
  }
  std::vector<std::string> dirs_;
};

CheckedRequest Chat(const std::string& text) {
  CheckedRequest request;
  request.prompt_kind = PromptKind::kChat;
  request.messages = {{"user", text}};
  request.add_generation_prompt = true;
  return request;
}

TEST_F(PromptCodecTest, TheFilesTemplateUnlessTheFlagChoosesAnother) {
  const std::string tiny = Model("tiny");  // Llama 3's template.
  absl::StatusOr<std::unique_ptr<PromptCodec>> own = PromptCodec::Load(tiny, "");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_THAT((*own)->chat_template_description(), StartsWith("llama3"));
  const std::string qwen = Model("qwen2-tiny");  // ChatML with Qwen2.5's default system prompt.
  absl::StatusOr<std::unique_ptr<PromptCodec>> chatml = PromptCodec::Load(qwen, "");
  ASSERT_TRUE(chatml.ok()) << chatml.status();
  EXPECT_THAT((*chatml)->chat_template_description(), StartsWith("chatml"));
  absl::StatusOr<std::vector<int32_t>> ids = (*chatml)->Encode(Chat("Hi"));
  ASSERT_TRUE(ids.ok()) << ids.status();
  // Forced to Llama 3, the ChatML model's vocabulary lacks its special tokens: the chat fails
  // naming one, the format having been chosen by the flag.
  absl::StatusOr<std::unique_ptr<PromptCodec>> forced = PromptCodec::Load(qwen, "llama3");
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_THAT((*forced)->chat_template_description(), StartsWith("llama3"));
  EXPECT_THAT(std::string((*forced)->Encode(Chat("Hi")).status().message()),
              HasSubstr("<|begin_of_text|>, which this tokenizer lacks"));
  // An unknown name is a start-up error naming the choices.
  absl::StatusOr<std::unique_ptr<PromptCodec>> unknown = PromptCodec::Load(tiny, "gemma");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("gemma"));
}

}  // namespace
}  // namespace arbor::coordinator
