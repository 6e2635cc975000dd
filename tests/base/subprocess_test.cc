#include "base/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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

// A process that starts a child and dies without stopping it (as `arbor up` killed with SIGKILL
// would): the child is killed too. This test reaps it as the orphans' subreaper.
TEST(Subprocess, AChildDiesWithTheProcessThatStartedIt) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int pid_pipe[2];
  ASSERT_EQ(pipe(pid_pipe), 0);
  const pid_t starter = fork();
  ASSERT_GE(starter, 0);
  if (starter == 0) {
    absl::StatusOr<Subprocess> child = Subprocess::Start({"sleep", "30"});
    const pid_t pid = child.ok() ? child->pid() : -1;
    (void)!write(pid_pipe[1], &pid, sizeof(pid));
    _exit(0);  // No destructor: the child is left running.
  }
  close(pid_pipe[1]);
  pid_t child = -1;
  ASSERT_EQ(read(pid_pipe[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  close(pid_pipe[0]);
  ASSERT_GT(child, 0) << "the starter could not start its child";
  int status = 0;
  ASSERT_EQ(waitpid(starter, &status, 0), starter);
  pid_t reaped = 0;  // The orphan comes to its subreaper.
  for (int i = 0; i < 500 && reaped == 0; ++i) {
    reaped = waitpid(child, &status, WNOHANG);
    if (reaped == 0) usleep(10000);
  }
  if (reaped == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child outlived the process that started it by 5 s";
  }
  EXPECT_EQ(reaped, child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(Files, AtomicWriteThenRead) {
  const std::string path = testing::TempDir() + "/atomic.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "1234\n").ok());
  EXPECT_EQ(*ReadFile(path), "1234\n");
  EXPECT_EQ(ReadFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace arbor::base
