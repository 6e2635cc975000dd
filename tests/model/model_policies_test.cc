// The fitted policies shipped with the known models: each known model's file is compiled in, is
// a valid policy over the defaults, and leaves the mode and TRACE's options alone (so it tunes
// search and the canonical sampler without changing which policy the model is served with).
#include "model/model_policies.h"

#include <cstdio>
#include <string>

#include "base/files.h"
#include "gtest/gtest.h"
#include "policy/policy_convert.h"
#include "policy/policy_file.h"

namespace arbor::model {
namespace {

TEST(ModelPolicies, EveryShippedPolicyIsValidAndLeavesTheModeAlone) {
  for (const KnownModel& known : KnownModels()) {
    if (known.policy_file.empty()) continue;
    const std::string_view json = FittedPolicy(known);
    ASSERT_FALSE(json.empty()) << known.name << ": " << known.policy_file << " is not compiled in";
    const std::string path = ::testing::TempDir() + "/" + known.policy_file;
    ASSERT_TRUE(base::WriteFileAtomically(path, std::string(json)).ok());
    absl::StatusOr<v1::PolicyConfig> policy = policy::ReadPolicyFile(path);
    std::remove(path.c_str());
    ASSERT_TRUE(policy.ok()) << policy.status();
    EXPECT_FALSE(policy->has_mode()) << "the served policy's mode is the registry's choice";
    EXPECT_FALSE(policy->has_trace()) << "a fork gate would change CoT-decoding";
    EXPECT_TRUE(policy->sampling().has_temperature()) << "the fitted temperature law";
    EXPECT_TRUE(policy::PolicyFromProto(*policy, entropix::PolicyConfig{}).ok());
  }
  KnownModel unknown;
  EXPECT_TRUE(FittedPolicy(unknown).empty());
}

}  // namespace
}  // namespace arbor::model
