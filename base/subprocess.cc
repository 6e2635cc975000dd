#include "base/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

extern char** environ;

namespace arbor::base {

namespace {

// argv[0] as execve needs it: itself when it names a path, else the first executable file of
// that name on PATH; empty when there is none.
std::string Executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The child between fork and exec (async-signal-safe calls only). It dies with the thread that
// started it, so that a killed `arbor up` or test leaves no server running, and exits at once
// when that parent is already gone. An exec that fails writes its errno to `error_fd`.
[[noreturn]] void ExecChild(const char* path, char* const* args, const char* log_path, pid_t parent,
                            int error_fd) {
  int err = 0;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
  if (log_path != nullptr) {
    const int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) err = errno;
    if (fd > STDERR_FILENO) close(fd);
  }
  if (err == 0) {
    execve(path, args, environ);
    err = errno;
  }
  (void)!write(error_fd, &err, sizeof(err));
  _exit(127);
}

}  // namespace

absl::StatusOr<Subprocess> Subprocess::Start(const std::vector<std::string>& argv,
                                             const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("Subprocess::Start: empty argv");
  const auto failed = [&argv](int err) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start '", absl::StrJoin(argv, " "), "': ", std::strerror(err)));
  };
  const std::string path = Executable(argv[0]);
  if (path.empty()) return failed(ENOENT);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) return failed(errno);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    ExecChild(path.c_str(), args.data(), log_path.empty() ? nullptr : log_path.c_str(), parent,
              error_pipe[1]);
  }
  const int fork_error = errno;
  close(error_pipe[1]);
  if (pid < 0) {
    close(error_pipe[0]);
    return failed(fork_error);
  }
  // The pipe closes on a successful exec: zero bytes. Otherwise the child's errno.
  int err = 0;
  ssize_t got;
  do {
    got = read(error_pipe[0], &err, sizeof(err));
  } while (got < 0 && errno == EINTR);
  close(error_pipe[0]);
  Subprocess child(pid);
  if (got == static_cast<ssize_t>(sizeof(err))) {
    child.Reap(/*block=*/true);
    return failed(err);
  }
  return child;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(other.pid_), exit_code_(other.exit_code_) {
  other.pid_ = -1;
}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !exit_code_) Stop(absl::ZeroDuration());
    pid_ = other.pid_;
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_) {
    Signal(SIGKILL);
    Reap(/*block=*/true);
  }
}

void Subprocess::Signal(int signal) {
  if (pid_ > 0 && !exit_code_) kill(pid_, signal);
}

std::optional<int> Subprocess::Reap(bool block) {
  if (exit_code_ || pid_ <= 0) return exit_code_;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return std::nullopt;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_code_;
}

std::optional<int> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (std::optional<int> code = Reap(/*block=*/false)) return code;
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

int Subprocess::Stop(absl::Duration grace) {
  Signal(SIGTERM);
  if (std::optional<int> code = Wait(grace)) return *code;
  Signal(SIGKILL);
  return Reap(/*block=*/true).value_or(-1);
}

}  // namespace arbor::base
