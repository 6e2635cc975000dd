// The jobs of one HTTP request (its choices) run as concurrent Generate streams on the
// coordinator's own Generation service, their events merged into one queue in arrival order.
//
// Each choice's stream owns its job, so cancelling the runner (the HTTP client went away, a
// sibling choice failed) cancels every job and frees its KV, exactly as a gRPC client's cancel.
#ifndef ARBOR_COORDINATOR_HTTP_CHOICE_RUNNER_H_
#define ARBOR_COORDINATOR_HTTP_CHOICE_RUNNER_H_

#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.grpc.pb.h"

namespace arbor::coordinator::http {

class ChoiceRunner {
 public:
  // One item of the merged stream: an event of choice `index`, or (no event) the end of that
  // choice's stream with its status.
  struct Item {
    int index = 0;
    std::optional<arbor::v1::GenerateEvent> event;
    absl::Status status;
  };

  // Starts one stream per request at once.
  ChoiceRunner(arbor::v1::Generation::StubInterface* stub, const std::string& authorization,
               const std::vector<arbor::v1::GenerateRequest>& requests);
  // Cancels what still runs and waits for the streams to end.
  ~ChoiceRunner();
  ChoiceRunner(const ChoiceRunner&) = delete;
  ChoiceRunner& operator=(const ChoiceRunner&) = delete;

  // Blocks for the next item. Call it only while some stream has not ended: each choice ends
  // exactly once.
  Item Next();
  // The same, waiting at most `timeout`; nullopt when nothing came.
  std::optional<Item> NextWithin(absl::Duration timeout);
  // Cancels every choice's call (and so its job); their ends still arrive through Next.
  void CancelAll();

 private:
  void Read(arbor::v1::Generation::StubInterface* stub, const arbor::v1::GenerateRequest& request,
            int index);
  void Push(Item item);

  std::vector<std::unique_ptr<grpc::ClientContext>> contexts_;
  std::vector<std::thread> threads_;
  absl::Mutex mu_;
  std::deque<Item> items_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_CHOICE_RUNNER_H_
