// A gate for callbacks that can outlive the object they call into: gRPC completions, timers and
// listeners that their source cannot take back. Each call enters the gate and runs only while
// it is open; the owner closes it before its members go away, and Close waits for the calls
// already inside to leave, so none runs half against a destroyed object. Calls may nest (a call
// inside may enter again), which a reader lock would not allow once a writer waits.
#ifndef ARBOR_BASE_CALLBACK_GATE_H_
#define ARBOR_BASE_CALLBACK_GATE_H_

#include "absl/synchronization/mutex.h"

namespace arbor::base {

class CallbackGate {
 public:
  // One call's stay inside the gate: true while the gate let it in, and it leaves when destroyed.
  class Pass {
   public:
    Pass(Pass&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Pass& operator=(Pass&&) = delete;
    ~Pass() {
      if (gate_ != nullptr) gate_->Leave();
    }
    explicit operator bool() const { return gate_ != nullptr; }

   private:
    friend class CallbackGate;
    explicit Pass(CallbackGate* gate) : gate_(gate) {}
    CallbackGate* gate_;
  };

  CallbackGate() = default;
  CallbackGate(const CallbackGate&) = delete;
  CallbackGate& operator=(const CallbackGate&) = delete;

  // A pass that is false once the gate is closed.
  Pass Enter() {
    absl::MutexLock lock(&mu_);
    if (closed_) return Pass(nullptr);
    ++inside_;
    return Pass(this);
  }

  // Lets no more calls in and waits for those inside. Must not be called from inside.
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    mu_.Await(absl::Condition(
        +[](int* inside) { return *inside == 0; }, &inside_));
  }

 private:
  void Leave() {
    absl::MutexLock lock(&mu_);
    --inside_;
  }

  absl::Mutex mu_;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_CALLBACK_GATE_H_
