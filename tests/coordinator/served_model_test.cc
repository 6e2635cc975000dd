// The default policy a coordinator derives from its --model: a known model's own (by name or by
// identity) with its fitted thresholds, each part replaced by the operator's flag, and the
// built-in default for any other model.
#include "coordinator/served_model.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/smollm2.h"

namespace arbor::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(ServedModel, AnotherModelKeepsTheBuiltInDefault) {
  absl::StatusOr<ServedModel> tiny = ResolveServedModel("tiny");
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  EXPECT_EQ(tiny->known.known, nullptr);
  EXPECT_FALSE(tiny->identity.fingerprint.empty());
  absl::StatusOr<DefaultPolicy> chosen = ChooseDefaultPolicy(*tiny, "", "");
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->policy.mode, entropix::PolicyMode::kSearch);
  EXPECT_THAT(chosen->description, HasSubstr("entropix search (the built-in default)"));
  EXPECT_THAT(chosen->description, HasSubstr("is no known model"));
}

TEST(ServedModel, ErrorsNameTheFlag) {
  absl::StatusOr<ServedModel> tiny = ResolveServedModel("tiny");
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  EXPECT_THAT(std::string(ChooseDefaultPolicy(*tiny, "bogus", "").status().message()),
              HasSubstr("--policy: "));
  EXPECT_THAT(std::string(ChooseDefaultPolicy(*tiny, "", "/nonexistent.json").status().message()),
              HasSubstr("--policy_file: "));
  EXPECT_THAT(std::string(ResolveServedModel("/nonexistent/model").status().message()),
              HasSubstr("--model: "));
}

TEST(ServedModel, TheRealSmolLM2ServesItsFittedPolicyUnlessTheOperatorChooses) {
  const absl::StatusOr<std::string> path = testing::SmolLM2Path();
  if (absl::IsUnavailable(path.status())) GTEST_SKIP() << path.status();  // No network.
  ASSERT_TRUE(path.ok()) << path.status();
  absl::StatusOr<ServedModel> served = ResolveServedModel(*path);  // By identity.
  ASSERT_TRUE(served.ok()) << served.status();
  ASSERT_NE(served->known.known, nullptr);
  absl::StatusOr<DefaultPolicy> fitted = ChooseDefaultPolicy(*served, "", "");
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  EXPECT_EQ(fitted->policy.mode, entropix::PolicyMode::kTrace);
  EXPECT_THAT(fitted->description, HasSubstr("cot_decoding (smollm2-135m-instruct's"));
  EXPECT_THAT(fitted->description, HasSubstr("fitted thresholds"));

  absl::StatusOr<DefaultPolicy> named = ChooseDefaultPolicy(*served, "search", "");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->policy.mode, entropix::PolicyMode::kSearch);
  EXPECT_THAT(named->description, HasSubstr("search (--policy) with smollm2-135m-instruct's "
                                            "fitted thresholds"));

  // The operator's file replaces the fitted one; the model's policy by name stays.
  const std::string file = ::testing::TempDir() + "/served-model-policy.json";
  std::ofstream(file, std::ios::trunc) << "{}";
  absl::StatusOr<DefaultPolicy> own = ChooseDefaultPolicy(*served, "", file);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->policy.mode, entropix::PolicyMode::kTrace);
  EXPECT_THAT(own->description, HasSubstr("(--policy_file)"));
  EXPECT_THAT(own->description, ::testing::Not(HasSubstr("fitted thresholds")));
}

}  // namespace
}  // namespace arbor::coordinator
