// Memory sizes as written on command lines: units, percentages, and what is refused.
#include "base/memory_size.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace arbor::base {
namespace {

TEST(ParseMemorySize, UnitsAndPercentages) {
  const int64_t available = 8'000'000'000;
  const std::pair<const char*, int64_t> cases[] = {
      {"1048576", 1048576},   {"512MiB", 512LL << 20}, {"512mib", 512LL << 20},
      {"2GB", 2'000'000'000}, {"2g", 2'000'000'000},   {"1.5G", 1'500'000'000},
      {"4Gi", 4LL << 30},     {"64kB", 64'000},        {"3KiB", 3072},
      {"1TiB", 1LL << 40},    {" 10b ", 10},           {"25%", 2'000'000'000},
      {"100%", available},    {"0.5%", 40'000'000}};
  for (const auto& [text, bytes] : cases) {
    absl::StatusOr<int64_t> parsed = ParseMemorySize(text, available);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(*parsed, bytes) << text;
  }
  for (const char* bad : {"", "GiB", "12 apples", "-1G", "1e9", "0", "0.4", "101%", "0%", "x%",
                          "1Pi", "99999999999TiB"}) {
    absl::StatusOr<int64_t> parsed = ParseMemorySize(bad, available);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(std::string(ParseMemorySize("lots", available).status().message()),
              ::testing::HasSubstr("512MiB"));
}

TEST(AvailableMemoryBytes, ReadsTheMachinesMemory) {
  const std::optional<int64_t> available = AvailableMemoryBytes();
  ASSERT_TRUE(available.has_value()) << "this Linux machine has /proc/meminfo";
  EXPECT_GT(*available, 16 << 20);
}

}  // namespace
}  // namespace arbor::base
