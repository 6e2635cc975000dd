#include "base/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "base/files.h"

namespace arbor::base {
namespace {

TEST(Subprocess, ReportsExitCode) {
  absl::StatusOr<Subprocess> p = Subprocess::Start({"sh", "-c", "exit 3"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Wait(absl::Seconds(10)), 3);
}

TEST(Subprocess, StopSendsTermThenKill) {
  absl::StatusOr<Subprocess> p = Subprocess::Start({"sleep", "30"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Wait(absl::Milliseconds(50)), std::nullopt);
  EXPECT_EQ(p->Stop(absl::Seconds(5)), 128 + SIGTERM);
}

TEST(Subprocess, MissingBinaryIsAnError) {
  absl::StatusOr<Subprocess> p = Subprocess::Start({"/nonexistent/arbor-no-such-binary"});
  EXPECT_FALSE(p.ok());
}

TEST(Subprocess, RedirectsOutputToLog) {
  const std::string log = testing::TempDir() + "/subprocess_test.log";
  std::filesystem::remove(log);
  absl::StatusOr<Subprocess> p = Subprocess::Start({"sh", "-c", "echo out; echo err >&2"}, log);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->Wait(absl::Seconds(10)), 0);
  EXPECT_EQ(*ReadFile(log), "out\nerr\n");
}

TEST(Files, AtomicWriteThenRead) {
  const std::string path = testing::TempDir() + "/atomic.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "1234\n").ok());
  EXPECT_EQ(*ReadFile(path), "1234\n");
  EXPECT_EQ(ReadFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace arbor::base
