// A Worker gRPC service for tests of the coordinator's cluster side: answers Info and Health
// from values the test sets, or UNAVAILABLE while "down", as a late or crashed worker would.
#ifndef ARBOR_TESTS_COORDINATOR_CLUSTER_FAKE_WORKER_H_
#define ARBOR_TESTS_COORDINATOR_CLUSTER_FAKE_WORKER_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "rpc/server.h"

namespace arbor::coordinator {

class FakeWorker final : public arbor::v1::Worker::Service {
 public:
  explicit FakeWorker(const std::string& id) {
    info_.set_worker_id(id);
    info_.set_block_size(16);
    info_.set_kv_capacity_tokens(4096);
    info_.mutable_model()->set_vocab_size(1000);
    info_.mutable_model()->set_max_context(512);
    health_.set_serving(true);
  }

  grpc::Status Info(grpc::ServerContext*, const arbor::v1::InfoRequest*,
                    arbor::v1::WorkerInfo* info) override {
    ++info_calls;
    if (!up) return {grpc::StatusCode::UNAVAILABLE, "starting"};
    *info = info_;
    return grpc::Status::OK;
  }
  grpc::Status Health(grpc::ServerContext*, const arbor::v1::HealthRequest*,
                      arbor::v1::HealthResponse* health) override {
    ++health_calls;
    if (!up) return {grpc::StatusCode::UNAVAILABLE, "down"};
    absl::MutexLock lock(&mu_);
    *health = health_;
    return grpc::Status::OK;
  }
  void SetLiveSequences(int n) {
    absl::MutexLock lock(&mu_);
    health_.set_live_sequences(n);
  }
  // What Health reports as `serving` (a worker whose device failed says false).
  void SetServing(bool serving) {
    absl::MutexLock lock(&mu_);
    health_.set_serving(serving);
  }

  // Serves on a free loopback port.
  absl::Status Start() {
    auto server = rpc::Server::Start("127.0.0.1:0", {this});
    if (!server.ok()) return server.status();
    server_ = std::move(*server);
    return absl::OkStatus();
  }
  std::string address() const { return server_->address(); }
  const arbor::v1::WorkerInfo& info() const { return info_; }

  std::atomic<bool> up{true};
  std::atomic<int> info_calls{0};
  std::atomic<int> health_calls{0};

 private:
  arbor::v1::WorkerInfo info_;
  absl::Mutex mu_;
  arbor::v1::HealthResponse health_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<rpc::Server> server_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_TESTS_COORDINATOR_CLUSTER_FAKE_WORKER_H_
