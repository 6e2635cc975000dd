#include "coordinator/http/choice_runner.h"

#include <utility>

#include "rpc/grpc_status.h"

namespace arbor::coordinator::http {

ChoiceRunner::ChoiceRunner(arbor::v1::Generation::StubInterface* stub,
                           const std::string& authorization,
                           const std::vector<arbor::v1::GenerateRequest>& requests) {
  // Every context exists before any thread starts, so CancelAll never races their creation.
  for (size_t i = 0; i < requests.size(); ++i) {
    contexts_.push_back(std::make_unique<grpc::ClientContext>());
    if (!authorization.empty()) contexts_.back()->AddMetadata("authorization", authorization);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    threads_.emplace_back(&ChoiceRunner::Read, this, stub, requests[i], static_cast<int>(i));
  }
}

ChoiceRunner::~ChoiceRunner() {
  CancelAll();
  for (std::thread& t : threads_) t.join();
}

void ChoiceRunner::Read(arbor::v1::Generation::StubInterface* stub,
                        const arbor::v1::GenerateRequest& request, int index) {
  std::unique_ptr<grpc::ClientReaderInterface<arbor::v1::GenerateEvent>> reader =
      stub->Generate(contexts_[index].get(), request);
  arbor::v1::GenerateEvent event;
  while (reader->Read(&event)) Push({index, std::move(event), absl::OkStatus()});
  Push({index, std::nullopt, rpc::FromGrpcStatus(reader->Finish())});
}

void ChoiceRunner::Push(Item item) {
  absl::MutexLock lock(&mu_);
  items_.push_back(std::move(item));
}

ChoiceRunner::Item ChoiceRunner::Next() { return *NextWithin(absl::InfiniteDuration()); }

std::optional<ChoiceRunner::Item> ChoiceRunner::NextWithin(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(
          absl::Condition(+[](std::deque<Item>* items) { return !items->empty(); }, &items_),
          timeout)) {
    return std::nullopt;
  }
  Item item = std::move(items_.front());
  items_.pop_front();
  return item;
}

void ChoiceRunner::CancelAll() {
  for (const auto& context : contexts_) context->TryCancel();
}

}  // namespace arbor::coordinator::http
