// A checkpoint's identity: read from its config and tokenizer alone, the same as a loaded
// checkpoint's, different between models, and the real SmolLM2 file is recognised as the known
// model whatever its path (so a bare coordinator serves it with its fitted policy).
#include "model/model_identity.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/model_policies.h"
#include "tests/support/smollm2.h"

namespace arbor::model {
namespace {

using ::testing::HasSubstr;

std::string MakePreset(const std::string& preset) {
  MakeModelOptions options;
  options.preset = preset;
  options.out_dir = ::testing::TempDir() + "/identity-" + preset;
  options.seed = 1;
  EXPECT_TRUE(MakeModel(options).ok());
  return options.out_dir;
}

TEST(ModelIdentity, IsTheLoadedCheckpointsAndTellsModelsApart) {
  const std::string tiny = MakePreset("tiny");
  absl::StatusOr<ModelIdentity> identity = ReadModelIdentity(tiny);
  ASSERT_TRUE(identity.ok()) << identity.status();
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(tiny);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  absl::StatusOr<ModelTokenizer> tokenizer = LoadModelTokenizer(tiny);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ(identity->fingerprint,
            ModelFingerprint((*checkpoint)->config(), *tokenizer->tokenizer));
  EXPECT_THAT(identity->fingerprint, HasSubstr("vocab 512"));

  absl::StatusOr<ModelIdentity> small = ReadModelIdentity(MakePreset("small"));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_NE(small->fingerprint, identity->fingerprint);
  const ServedKnownModel served = FindServedKnownModel(tiny, *identity);
  EXPECT_EQ(served.known, nullptr);
  EXPECT_THAT(served.reason, HasSubstr("is no known model"));
}

TEST(ModelIdentity, MissingCheckpointSaysWhatWasExpected) {
  absl::StatusOr<ModelIdentity> identity = ReadModelIdentity("/nonexistent/model");
  EXPECT_TRUE(absl::IsNotFound(identity.status()));
  EXPECT_THAT(std::string(identity.status().message()), HasSubstr(".gguf"));
}

TEST(ModelIdentity, TheRealSmolLM2FileIsTheKnownModelByIdentity) {
  const absl::StatusOr<std::string> path = testing::SmolLM2Path();
  if (absl::IsUnavailable(path.status())) GTEST_SKIP() << path.status();  // No network.
  ASSERT_TRUE(path.ok()) << path.status();
  absl::StatusOr<ModelIdentity> identity = ReadModelIdentity(*path);
  ASSERT_TRUE(identity.ok()) << identity.status();
  const KnownModel* known = FindKnownModel(kDefaultModelName);
  ASSERT_NE(known, nullptr);
  EXPECT_EQ(identity->fingerprint, known->fingerprint);
  // By its path, as a bare coordinator or a deployment names it.
  const ServedKnownModel by_path = FindServedKnownModel(*path, *identity);
  EXPECT_EQ(by_path.known, known);
  EXPECT_THAT(by_path.reason, HasSubstr("same architecture, shape and tokenizer"));
  EXPECT_EQ(FindServedKnownModel(kDefaultModelName, *identity).known, known);
  EXPECT_FALSE(FittedPolicy(*by_path.known).empty());
}

}  // namespace
}  // namespace arbor::model
