#include "base/host_port.h"

#include <gtest/gtest.h>

namespace arbor::base {
namespace {

TEST(HostPortTest, SplitsHostAndPort) {
  absl::StatusOr<HostPort> v4 = ParseHostPort("127.0.0.1:9090");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 9090);
  absl::StatusOr<HostPort> v6 = ParseHostPort("[::1]:0");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
}

TEST(HostPortTest, RefusesWhatIsNotHostColonPort) {
  for (const char* bad : {"", "9090", ":9090", "[]:1", "host:", "host:x", "host:-1", "host:65536",
                          "host:+80", "host: 80", "host:80 ", "host:000080"}) {
    absl::StatusOr<HostPort> parsed = ParseHostPort(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace arbor::base
