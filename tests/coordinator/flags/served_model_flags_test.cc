// The served-model flags as arbor-coordinator reads them and as `arbor up` hands them on.
#include "coordinator/flags/served_model_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"

ABSL_DECLARE_FLAG(std::string, policy);
ABSL_DECLARE_FLAG(std::string, chat_template);
ABSL_DECLARE_FLAG(std::string, served_model_name);

namespace arbor::coordinator {
namespace {

TEST(ServedModelFlags, ReadsEachFlag) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_policy, "greedy");
  absl::SetFlag(&FLAGS_chat_template, "chatml");
  absl::SetFlag(&FLAGS_served_model_name, "my-model");
  const ServedModelFlags flags = ServedModelFlagsFromFlags();
  EXPECT_EQ(flags.policy, "greedy");
  EXPECT_EQ(flags.chat_template, "chatml");
  EXPECT_EQ(flags.served_model_name, "my-model");
}

// A started coordinator gets only what is set, under the names it parses.
TEST(ServedModelFlags, ArgsCarryTheSetFieldsOnly) {
  EXPECT_TRUE(ServedModelArgs(ServedModelFlags{}).empty());
  EXPECT_EQ(ServedModelArgs({.policy = "", .chat_template = "llama3", .served_model_name = "m"}),
            std::vector<std::string>({"--chat_template=llama3", "--served_model_name=m"}));
  EXPECT_EQ(ServedModelArgs({.policy = "trace", .chat_template = "", .served_model_name = ""}),
            std::vector<std::string>({"--policy=trace"}));
}

}  // namespace
}  // namespace arbor::coordinator
