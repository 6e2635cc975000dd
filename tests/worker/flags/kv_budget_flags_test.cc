// The KV budget flags as arbor-worker reads them and as `arbor up` hands them to its workers.
#include "worker/flags/kv_budget_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"

ABSL_DECLARE_FLAG(int64_t, kv_tokens);
ABSL_DECLARE_FLAG(std::string, kv_memory);

namespace arbor::worker {
namespace {

TEST(KvBudgetFlags, ReadsBothFlags) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_kv_tokens, 4096);
  absl::SetFlag(&FLAGS_kv_memory, "2GiB");
  absl::StatusOr<KvBudget> budget = KvBudgetFromFlags();
  ASSERT_TRUE(budget.ok()) << budget.status();
  EXPECT_EQ(budget->tokens, 4096);
  EXPECT_EQ(budget->memory, "2GiB");
}

TEST(KvBudgetFlags, NegativeTokensAreRefusedByName) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_kv_tokens, -1);
  absl::StatusOr<KvBudget> budget = KvBudgetFromFlags();
  ASSERT_FALSE(budget.ok());
  EXPECT_EQ(budget.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(budget.status().message().find("--kv_tokens"), absl::string_view::npos);
}

// A started worker gets only what is set, under the names the worker parses.
TEST(KvBudgetFlags, ArgsCarryTheSetFieldsOnly) {
  EXPECT_TRUE(KvBudgetArgs(KvBudget{}).empty());
  EXPECT_EQ(KvBudgetArgs({.tokens = 0, .memory = "25%"}),
            std::vector<std::string>({"--kv_memory=25%"}));
  EXPECT_EQ(KvBudgetArgs({.tokens = 512, .memory = "1GiB"}),
            std::vector<std::string>({"--kv_tokens=512", "--kv_memory=1GiB"}));
}

}  // namespace
}  // namespace arbor::worker
