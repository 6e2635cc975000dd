// Every enum table of policy_enums.h is a one-to-one map between all values of its proto enum
// but UNSPECIFIED and all values of its entropix enum (both counted from the proto descriptor:
// the entropix enums number their values 0, 1, ... in the same count), so a value added to
// either side without a pair fails here rather than converting to the table's first value.
#include "policy/policy_enums.h"

#include <gtest/gtest.h>

#include <set>

#include "google/protobuf/descriptor.h"

namespace arbor::policy {
namespace {

template <typename Table>
void ExpectOneToOne(const Table& table, const google::protobuf::EnumDescriptor* descriptor) {
  using Proto = typename Table::ProtoType;
  using Config = typename Table::ConfigType;
  SCOPED_TRACE(descriptor->full_name());
  ASSERT_EQ(static_cast<int>(table.pairs().size()), descriptor->value_count() - 1);
  EXPECT_FALSE(table.FromProto(static_cast<Proto>(0)).has_value());  // UNSPECIFIED.
  std::set<int> configs;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const int number = descriptor->value(i)->number();
    if (number == 0) continue;
    const std::optional<Config> config = table.FromProto(static_cast<Proto>(number));
    ASSERT_TRUE(config.has_value()) << descriptor->value(i)->name() << " has no pair";
    EXPECT_EQ(static_cast<int>(table.ToProto(*config)), number) << descriptor->value(i)->name();
    configs.insert(static_cast<int>(*config));
  }
  for (int c = 0; c < descriptor->value_count() - 1; ++c) {
    EXPECT_TRUE(configs.count(c)) << "entropix value " << c << " has no pair";
  }
}

TEST(PolicyEnums, EveryTableMapsEveryValueBothWays) {
  ExpectOneToOne(kPolicyModes, v1::PolicyMode_descriptor());
  ExpectOneToOne(kBranchModes, v1::BranchMode_descriptor());
  ExpectOneToOne(kTraceVotes, v1::TraceVote_descriptor());
  ExpectOneToOne(kAttentionModes, v1::AttentionMode_descriptor());
  ExpectOneToOne(kStrategies, v1::Strategy_descriptor());
}

TEST(PolicyEnums, UnknownProtoValuesHaveNoPair) {
  EXPECT_FALSE(kStrategies.FromProto(static_cast<v1::Strategy>(99)).has_value());
  EXPECT_FALSE(kPolicyModes.FromProto(static_cast<v1::PolicyMode>(-1)).has_value());
}

}  // namespace
}  // namespace arbor::policy
