// A Backend that hands every call to another one: the base of the test decorators that change
// one behaviour of a real backend (inject faults, reduce rows another way) and keep the rest.
#ifndef ARBOR_TESTS_WORKER_ENGINE_FORWARDING_BACKEND_H_
#define ARBOR_TESTS_WORKER_ENGINE_FORWARDING_BACKEND_H_

#include <memory>
#include <string>
#include <utility>

#include "worker/backend/backend.h"

namespace arbor::worker::testing {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  const model::ModelConfig& config() const override { return inner_->config(); }
  std::string name() const override { return inner_->name(); }
  int32_t kv_num_blocks() const override { return inner_->kv_num_blocks(); }
  int32_t kv_block_size() const override { return inner_->kv_block_size(); }
  absl::Status CopyKvBlocks(std::span<const BlockCopy> copies) override {
    return inner_->CopyKvBlocks(copies);
  }
  absl::Status Forward(std::span<const ForwardRow> rows, const TensorTap& tap) override {
    return inner_->Forward(rows, tap);
  }
  absl::Status Usable() override { return inner_->Usable(); }
  void HostParallelFor(int64_t n, const std::function<void(int64_t)>& fn) override {
    inner_->HostParallelFor(n, fn);
  }

 protected:
  Backend& inner() { return *inner_; }

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace arbor::worker::testing

#endif  // ARBOR_TESTS_WORKER_ENGINE_FORWARDING_BACKEND_H_
