// The seed of a test's random draws, one helper for every randomized C++ test: ARBOR_TEST_SEED
// when it is set, so that a failure seen once can be replayed, else a fresh random seed, so that
// each run tries new inputs. Logged once per test with the line that replays it:
//   [ SEED     ] Suite.Case: 1234 (replay: ARBOR_TEST_SEED=1234)
// (tests/support/test_seed.py is the same for Python tests.)
#ifndef ARBOR_TESTS_SUPPORT_TEST_SEED_H_
#define ARBOR_TESTS_SUPPORT_TEST_SEED_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>

namespace arbor {

// This test's next seed. The first call in a test draws it (or reads ARBOR_TEST_SEED) and logs
// it; later calls in the same test return seed + 1, seed + 2, ... in the order asked, so that a
// test drawing several seeds is still replayed by the one logged.
inline uint32_t TestSeed() {
  struct Drawn {
    std::mutex mutex;
    std::string test;
    uint32_t first = 0;
    uint32_t handed = 0;
    bool any = false;
  };
  static Drawn drawn;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  std::string test = "(outside a test)";
  if (const ::testing::TestInfo* info = unit.current_test_info(); info != nullptr) {
    test = std::string(info->test_suite_name()) + "." + info->name();
  } else if (const ::testing::TestSuite* suite = unit.current_test_suite(); suite != nullptr) {
    test = suite->name();
  }
  std::lock_guard<std::mutex> lock(drawn.mutex);
  if (!drawn.any || test != drawn.test) {
    const char* fixed = std::getenv("ARBOR_TEST_SEED");
    if (fixed != nullptr && *fixed != '\0') {
      char* end = nullptr;
      drawn.first = static_cast<uint32_t>(std::strtoul(fixed, &end, 10));
      // A typo must not quietly replay seed 0.
      if (*end != '\0') ADD_FAILURE() << "ARBOR_TEST_SEED=" << fixed << " is not a number";
    } else {
      drawn.first = std::random_device{}();
    }
    drawn.test = test;
    drawn.handed = 0;
    drawn.any = true;
    std::printf("[ SEED     ] %s: %u (replay: ARBOR_TEST_SEED=%u)\n", test.c_str(), drawn.first,
                drawn.first);
    std::fflush(stdout);
  }
  return drawn.first + drawn.handed++;
}

}  // namespace arbor

#endif  // ARBOR_TESTS_SUPPORT_TEST_SEED_H_
