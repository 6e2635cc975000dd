#include "base/reload_signal.h"

#include <pthread.h>
#include <signal.h>

#include <utility>

namespace arbor::base {
namespace {

sigset_t ReloadSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void BlockReloadSignal() {
  const sigset_t set = ReloadSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

ReloadOnSignal::ReloadOnSignal(std::function<void()> reload)
    : thread_([this, reload = std::move(reload)] {
        const sigset_t set = ReloadSet();
        for (;;) {
          int signal = 0;
          if (sigwait(&set, &signal) != 0) continue;
          if (stopping_.load()) return;
          reload();
        }
      }) {}

ReloadOnSignal::~ReloadOnSignal() {
  stopping_.store(true);
  // A SIGHUP aimed at this thread ends its wait; the flag tells it to return.
  pthread_kill(thread_.native_handle(), SIGHUP);
  thread_.join();
}

}  // namespace arbor::base
