// A child process started from argv, for `arbor up`/`demo` and the integration tests that run
// the real server binaries.
#ifndef ARBOR_BASE_SUBPROCESS_H_
#define ARBOR_BASE_SUBPROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace arbor::base {

class Subprocess {
 public:
  // Starts argv[0] (looked up on PATH when it has no '/'). When `log_path` is set, the child's
  // stdout and stderr go to that file (appended), else they are inherited. The child is killed
  // (SIGKILL) when the thread that started it ends, the process with it, however it ends: a
  // killed `arbor up` leaves no worker behind.
  static absl::StatusOr<Subprocess> Start(const std::vector<std::string>& argv,
                                          const std::string& log_path = "");

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // Kills (SIGKILL) and reaps a child that is still running, so no test leaks processes.
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // Sends `signal` (e.g. SIGTERM); a no-op once the child has been reaped.
  void Signal(int signal);
  // Waits up to `timeout` for the child to exit. Returns its exit code (128 + signal number when
  // killed by a signal), or nullopt if it is still running.
  std::optional<int> Wait(absl::Duration timeout);
  // SIGTERM, wait up to `grace`, then SIGKILL. Returns the exit code.
  int Stop(absl::Duration grace);

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}
  std::optional<int> Reap(bool block);

  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_SUBPROCESS_H_
