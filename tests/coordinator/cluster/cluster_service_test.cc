#include "coordinator/cluster/cluster_service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "base/fake_clock.h"
#include "rpc/server.h"

namespace arbor::coordinator {
namespace {

class ClusterServiceTest : public testing::Test {
 protected:
  void SetUp() override {
    auto server = rpc::Server::Start("127.0.0.1:0", {&service_});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = arbor::v1::Cluster::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  static arbor::v1::RegisterWorkerRequest Registration(const std::string& address,
                                                       const std::string& id) {
    arbor::v1::RegisterWorkerRequest request;
    request.set_address(address);
    request.mutable_info()->set_worker_id(id);
    request.mutable_info()->set_block_size(16);
    request.mutable_info()->set_kv_capacity_tokens(1024);
    request.mutable_info()->mutable_model()->set_vocab_size(100);
    request.mutable_info()->mutable_model()->set_max_context(64);
    return request;
  }

  grpc::Status Register(const arbor::v1::RegisterWorkerRequest& request,
                        arbor::v1::RegisterWorkerResponse* response) {
    grpc::ClientContext context;
    return stub_->RegisterWorker(&context, request, response);
  }

  base::FakeClock clock_;
  WorkerPool pool_{WorkerPoolOptions{}, &clock_};
  ClusterService service_{&pool_, absl::Milliseconds(1500)};
  std::unique_ptr<rpc::Server> server_;
  std::unique_ptr<arbor::v1::Cluster::Stub> stub_;
};

TEST_F(ClusterServiceTest, RegisterHeartbeatListDrain) {
  arbor::v1::RegisterWorkerResponse registered;
  ASSERT_TRUE(Register(Registration("127.0.0.1:9001", "w1"), &registered).ok());
  EXPECT_EQ(registered.worker_id(), "w1");
  EXPECT_EQ(registered.heartbeat_interval_ms(), 1500);

  arbor::v1::HeartbeatRequest beat;
  beat.set_worker_id("w1");
  beat.mutable_load()->set_live_sequences(4);
  beat.mutable_load()->set_serving(true);
  arbor::v1::HeartbeatResponse beat_reply;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->Heartbeat(&context, beat, &beat_reply).ok());
  }
  EXPECT_TRUE(beat_reply.known());
  EXPECT_FALSE(beat_reply.drain());

  arbor::v1::ListWorkersResponse list;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->ListWorkers(&context, {}, &list).ok());
  }
  ASSERT_EQ(list.workers_size(), 1);
  EXPECT_EQ(list.workers(0).address(), "127.0.0.1:9001");
  EXPECT_EQ(list.workers(0).load().live_sequences(), 4);
  EXPECT_EQ(list.workers(0).state(), arbor::v1::WORKER_STATE_READY);

  arbor::v1::DrainWorkerRequest drain;
  drain.set_worker_id("w1");
  arbor::v1::DrainWorkerResponse drained;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->DrainWorker(&context, drain, &drained).ok());
  }
  EXPECT_EQ(drained.jobs_rehomed(), 0);
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->Heartbeat(&context, beat, &beat_reply).ok());
  }
  EXPECT_TRUE(beat_reply.drain());
}

TEST_F(ClusterServiceTest, UnknownWorkersAreToldToRegisterOrNotFound) {
  arbor::v1::HeartbeatRequest beat;
  beat.set_worker_id("ghost");
  arbor::v1::HeartbeatResponse reply;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->Heartbeat(&context, beat, &reply).ok());
  EXPECT_FALSE(reply.known());

  arbor::v1::DrainWorkerRequest drain;
  drain.set_worker_id("ghost");
  arbor::v1::DrainWorkerResponse drained;
  grpc::ClientContext drain_context;
  EXPECT_EQ(stub_->DrainWorker(&drain_context, drain, &drained).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ClusterServiceTest, BadInputNamesTheField) {
  struct Case {
    std::function<void(arbor::v1::RegisterWorkerRequest&)> mutate;
    const char* field;
  };
  const Case cases[] = {
      {[](auto& r) { r.clear_address(); }, "address:"},
      {[](auto& r) { r.set_address("no-port"); }, "address:"},
      {[](auto& r) { r.set_address("[::1]:+51"); }, "address:"},  // Found by fuzzing.
      // Without info.worker_id the address is the id, and ids are <= 128 bytes.
      {[](auto& r) {
         r.set_address(std::string(200, 'h') + ":1");
         r.mutable_info()->clear_worker_id();
       },
       "address (the worker id"},
      {[](auto& r) { r.clear_info(); }, "info:"},
      {[](auto& r) { r.mutable_info()->mutable_model()->set_vocab_size(0); },
       "info.model.vocab_size:"},
      {[](auto& r) { r.mutable_info()->mutable_model()->set_max_context(-1); },
       "info.model.max_context:"},
      {[](auto& r) { r.mutable_info()->set_block_size(0); }, "info.block_size:"},
      {[](auto& r) { r.mutable_info()->set_kv_capacity_tokens(0); }, "info.kv_capacity_tokens:"},
      {[](auto& r) { r.mutable_info()->mutable_model()->add_eos_token_ids(100); },
       "info.model.eos_token_ids[0]:"},
  };
  for (const Case& c : cases) {
    arbor::v1::RegisterWorkerRequest request = Registration("127.0.0.1:9002", "w2");
    c.mutate(request);
    arbor::v1::RegisterWorkerResponse response;
    const grpc::Status status = Register(request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_EQ(status.error_message().rfind(c.field, 0), 0u) << status.error_message();
  }
  arbor::v1::HeartbeatResponse reply;
  grpc::ClientContext context;
  EXPECT_EQ(stub_->Heartbeat(&context, {}, &reply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace arbor::coordinator
