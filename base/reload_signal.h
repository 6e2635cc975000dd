// SIGHUP as "reload your files" (the coordinator's token file), the Unix convention for daemons.
//
// BlockReloadSignal() must run in main() before any thread starts, like
// BlockTerminationSignals(), so SIGHUP reaches only the ReloadOnSignal thread and never kills
// the process (its default action).
#ifndef ARBOR_BASE_RELOAD_SIGNAL_H_
#define ARBOR_BASE_RELOAD_SIGNAL_H_

#include <atomic>
#include <functional>
#include <thread>

namespace arbor::base {

void BlockReloadSignal();

// Calls `reload` on a thread of its own at every SIGHUP until destroyed.
class ReloadOnSignal {
 public:
  explicit ReloadOnSignal(std::function<void()> reload);
  ~ReloadOnSignal();
  ReloadOnSignal(const ReloadOnSignal&) = delete;
  ReloadOnSignal& operator=(const ReloadOnSignal&) = delete;

 private:
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_RELOAD_SIGNAL_H_
