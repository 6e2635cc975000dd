// The serving flags every server binary shares, turned into its ServeOptions.
#include "rpc/serve_flags.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"

ABSL_DECLARE_FLAG(std::string, listen);
ABSL_DECLARE_FLAG(std::string, port_file);
ABSL_DECLARE_FLAG(int, drain_seconds);

namespace arbor::rpc {
namespace {

TEST(ServeFlags, EmptyListenIsTheBinarysOwnAddress) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_listen, "");
  EXPECT_EQ(ServeOptionsFromFlags("127.0.0.1:50061").listen, "127.0.0.1:50061");
}

TEST(ServeFlags, GivenFlagsWin) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_listen, "0.0.0.0:7000");
  absl::SetFlag(&FLAGS_port_file, "/run/port");
  absl::SetFlag(&FLAGS_drain_seconds, 3);
  const ServeOptions options = ServeOptionsFromFlags("127.0.0.1:50051");
  EXPECT_EQ(options.listen, "0.0.0.0:7000");
  EXPECT_EQ(options.port_file, "/run/port");
  EXPECT_EQ(options.drain_grace, absl::Seconds(3));
}

}  // namespace
}  // namespace arbor::rpc
