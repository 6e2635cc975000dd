// The KV column of `arbor workers`: tokens and bytes from blocks, block size and bytes per token.
#include "tools/kv_usage.h"

#include <gtest/gtest.h>

namespace arbor::tools {
namespace {

TEST(KvUsageTest, GroupsThousands) {
  EXPECT_EQ(GroupedCount(0), "0");
  EXPECT_EQ(GroupedCount(999), "999");
  EXPECT_EQ(GroupedCount(1024), "1,024");
  EXPECT_EQ(GroupedCount(46656), "46,656");
  EXPECT_EQ(GroupedCount(1234567), "1,234,567");
  EXPECT_EQ(GroupedCount(-1234), "-1,234");
}

TEST(KvUsageTest, BinaryBytesKeepThreeDigits) {
  EXPECT_EQ(BinaryBytes(0), "0 B");
  EXPECT_EQ(BinaryBytes(1023), "1023 B");
  EXPECT_EQ(BinaryBytes(1536), "1.50 KiB");
  EXPECT_EQ(BinaryBytes(12 << 20), "12.0 MiB");
  EXPECT_EQ(BinaryBytes(int64_t{544} << 20), "544 MiB");
  EXPECT_EQ(BinaryBytes(int64_t{3} << 40), "3.00 TiB");
}

TEST(KvUsageTest, TokensAndBytesFromBlocks) {
  arbor::v1::WorkerStatus worker;
  worker.mutable_info()->set_block_size(16);
  worker.mutable_load()->mutable_cache()->set_used_blocks(64);
  worker.mutable_load()->mutable_cache()->set_total_blocks(2916);
  // 12,288 bytes a token: 1,024 tokens are 12 MiB, 46,656 are 546.75 MiB.
  worker.mutable_info()->set_kv_bytes_per_token(12288);
  EXPECT_EQ(KvUsage(worker), "1,024/46,656 tokens (12.0 MiB/547 MiB)");
}

TEST(KvUsageTest, TokensOnlyWhenBytesAreNotReported) {
  arbor::v1::WorkerStatus worker;
  worker.mutable_info()->set_block_size(16);
  worker.mutable_load()->mutable_cache()->set_total_blocks(729);
  EXPECT_EQ(KvUsage(worker), "0/11,664 tokens");
}

}  // namespace
}  // namespace arbor::tools
