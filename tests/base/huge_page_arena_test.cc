// Tests of base::ZeroPages with huge pages and of base::HugePageArena: alignment, zeroed and
// disjoint buffers, the huge-page advice on the mapping, and buffers beyond one mapping.
#include "base/huge_page_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/zero_pages.h"

namespace arbor::base {
namespace {

// The VmFlags line of the mapping of /proc/self/smaps that holds `p`, or "" if none.
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2) {
      inside = begin <= at && at < end;
    } else if (inside && line.starts_with("VmFlags:")) {
      return line;
    }
  }
  return "";
}

TEST(ZeroPagesTest, HugePagesAreAlignedZeroedAndAdvised) {
  const size_t bytes = 3 * ZeroPages::kHugePageBytes + 12345;
  absl::StatusOr<ZeroPages> pages = ZeroPages::Map(bytes, /*huge_pages=*/true);
  ASSERT_TRUE(pages.ok()) << pages.status();
  ASSERT_EQ(pages->size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pages->data()) % ZeroPages::kHugePageBytes, 0u);
  for (size_t i = 0; i < bytes; i += 4096) ASSERT_EQ(pages->data()[i], 0) << i;
  EXPECT_EQ(pages->data()[bytes - 1], 0);
  std::memset(pages->data(), 7, bytes);
  EXPECT_EQ(pages->data()[bytes - 1], 7);
  // The advice is recorded on the mapping wherever the kernel has transparent huge pages.
  if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    EXPECT_NE(VmFlagsOf(pages->data()).find(" hg"), std::string::npos) << VmFlagsOf(pages->data());
  }
  ZeroPages moved = std::move(*pages);
  EXPECT_EQ(moved.size(), bytes);
  EXPECT_EQ(moved.data()[0], 7);
}

TEST(HugePageArenaTest, PacksAlignedZeroedDisjointBuffers) {
  HugePageArena arena;
  absl::StatusOr<char*> first = arena.Allocate(100);
  absl::StatusOr<char*> second = arena.Allocate(1000);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*first) % ZeroPages::kHugePageBytes, 0u);
  // Packed after the first, on the next 64-byte boundary.
  EXPECT_EQ(*second, *first + 128);
  std::memset(*first, 1, 100);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ((*second)[i], 0) << i;
  std::memset(*second, 2, 1000);
  EXPECT_EQ((*first)[99], 1);
}

TEST(HugePageArenaTest, BuffersBeyondAMappingGetTheirOwn) {
  HugePageArena arena;
  absl::StatusOr<char*> small = arena.Allocate(HugePageArena::kMappingBytes - 64);
  absl::StatusOr<char*> large = arena.Allocate(HugePageArena::kMappingBytes + 1);
  absl::StatusOr<char*> after = arena.Allocate(64);
  ASSERT_TRUE(small.ok() && large.ok() && after.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*large) % ZeroPages::kHugePageBytes, 0u);
  (*small)[HugePageArena::kMappingBytes - 65] = 1;
  (*large)[HugePageArena::kMappingBytes] = 2;
  // The large buffer's mapping is full: a fresh one.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*after) % ZeroPages::kHugePageBytes, 0u);
  EXPECT_NE(*after, *small);
  EXPECT_EQ((*after)[0], 0);
}

}  // namespace
}  // namespace arbor::base
