// A real arbor-worker process on a tiny make-model checkpoint, driven over gRPC: Info describes
// the model, Run + Release + Health work end to end, a bad request fails with a precise status
// while a concurrent good one succeeds, RunStream streams the steps Run answers with, and
// SIGTERM drains and exits 0 — with the KV cache in f32 and in bf16 (--kv_dtype).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "base/subprocess.h"
#include "model/make_model.h"
#include "tools/local_cluster.h"

namespace arbor::tools {
namespace {

std::string TempPath(const std::string& name) {
  return absl::StrCat(testing::TempDir(), "/worker-process-", name, "-", getpid());
}

class WorkerProcessTest : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model::MakeModelOptions options;
    options.out_dir = model_dir_;
    options.seed = 5;
    absl::StatusOr<model::ModelConfig> config = model::MakeModel(options);
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *config;
    absl::StatusOr<base::Subprocess> server = StartServer(
        {ARBOR_BINARY_DIR "/bin/arbor-worker", "--model=" + model_dir_, "--kv_tokens=4096",
         "--threads=1", "--log_level=warn", absl::StrCat("--kv_dtype=", GetParam())},
        "127.0.0.1:0", TempPath("port"), TempPath("log"), absl::Seconds(60), &address_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::make_unique<base::Subprocess>(*std::move(server));
    stub_ = v1::Worker::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    std::filesystem::remove_all(model_dir_);
    std::filesystem::remove(TempPath("port"));
    std::filesystem::remove(TempPath("log"));
  }

  grpc::Status Run(const v1::RunRequest& request, v1::RunResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return stub_->Run(&context, request, response);
  }
  v1::HealthResponse Health() {
    grpc::ClientContext context;
    v1::HealthResponse health;
    EXPECT_TRUE(stub_->Health(&context, v1::HealthRequest(), &health).ok());
    return health;
  }
  static v1::RunItem Item(uint64_t id, int prompt, int32_t max_steps) {
    v1::RunItem item;
    item.set_sequence_id(id);
    for (int i = 0; i < prompt; ++i) item.add_append((3 + 29 * i) % 250);
    item.set_max_steps(max_steps);
    item.set_top_k(3);
    item.mutable_stop()->set_ignore_eos(true);
    return item;
  }

  // Info describes the served model and KV pool.
  void ExpectInfoDescribesTheModel() {
    grpc::ClientContext info_context;
    v1::WorkerInfo info;
    ASSERT_TRUE(stub_->Info(&info_context, v1::InfoRequest(), &info).ok());
    EXPECT_EQ(info.backend(), "cpu");
    EXPECT_EQ(info.model().vocab_size(), config_.vocab_size);
    EXPECT_EQ(info.model().num_layers(), config_.num_layers);
    EXPECT_EQ(info.model().num_heads(), config_.num_heads);
    EXPECT_EQ(info.model().num_kv_heads(), config_.num_kv_heads);
    EXPECT_EQ(info.model().head_dim(), config_.head_dim);
    EXPECT_EQ(info.model().max_context(), config_.max_position_embeddings);
    EXPECT_EQ(info.model().bos_token_id(), config_.bos_token_id);
    EXPECT_EQ(info.model().eos_token_ids_size(), static_cast<int>(config_.eos_token_ids.size()));
    EXPECT_EQ(info.block_size(), 16);
    EXPECT_EQ(info.kv_capacity_tokens(), 4096);
  }

  // A bad request (token outside the vocabulary) fails while a good one runs beside it.
  void ExpectABadRunLeavesAGoodOneBeside() {
    v1::RunRequest bad;
    *bad.add_items() = Item(2, 4, 2);
    bad.mutable_items(0)->set_append(2, config_.vocab_size);
    v1::RunRequest good;
    *good.add_items() = Item(3, 12, 40);
    grpc::Status bad_status, good_status;
    v1::RunResponse bad_response, good_response;
    std::thread good_thread([&] { good_status = Run(good, &good_response); });
    bad_status = Run(bad, &bad_response);
    good_thread.join();
    EXPECT_EQ(bad_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(bad_status.error_message().find("items[0].append[2]"), std::string::npos)
        << bad_status.error_message();
    ASSERT_TRUE(good_status.ok()) << good_status.error_message();
    EXPECT_EQ(good_response.results(0).steps_size(), 40);
  }

  const std::string model_dir_ = TempPath("model");
  model::ModelConfig config_;
  std::string address_;
  std::unique_ptr<base::Subprocess> server_;
  std::unique_ptr<v1::Worker::Stub> stub_;
};

TEST_P(WorkerProcessTest, ServesRunsAndDrainsOnSigterm) {
  ASSERT_NO_FATAL_FAILURE(ExpectInfoDescribesTheModel());
  v1::RunRequest request;
  *request.add_items() = Item(1, 20, 6);
  v1::RunResponse response;
  grpc::Status status = Run(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.results_size(), 1);
  EXPECT_EQ(response.results(0).steps_size(), 6);
  EXPECT_EQ(response.results(0).stop_reason(), v1::STOP_REASON_MAX_STEPS);
  EXPECT_EQ(response.results(0).length(), 26);
  EXPECT_EQ(response.results(0).steps(5).top_k_size(), 3);
  EXPECT_GE(response.timings().forward_steps(), 6);

  v1::HealthResponse health = Health();
  EXPECT_TRUE(health.serving());
  EXPECT_EQ(health.live_sequences(), 1);
  EXPECT_GT(health.cache().used_blocks(), 0);

  ASSERT_NO_FATAL_FAILURE(ExpectABadRunLeavesAGoodOneBeside());

  // Unknown sequence → NOT_FOUND.
  v1::RunRequest unknown;
  *unknown.add_items() = Item(9, 0, 1);
  unknown.mutable_items(0)->set_truncate_to(2);
  v1::RunResponse unknown_response;
  EXPECT_EQ(Run(unknown, &unknown_response).error_code(), grpc::StatusCode::NOT_FOUND);
  unknown.mutable_items(0)->clear_truncate_to();
  unknown.mutable_items(0)->set_continues(true);  // A coordinator's continue item.
  EXPECT_EQ(Run(unknown, &unknown_response).error_code(), grpc::StatusCode::NOT_FOUND);

  grpc::ClientContext release_context;
  v1::ReleaseRequest release;
  release.add_sequence_ids(1);
  release.add_sequence_ids(3);
  release.add_sequence_ids(12345);
  v1::ReleaseResponse released;
  ASSERT_TRUE(stub_->Release(&release_context, release, &released).ok());
  EXPECT_EQ(released.released(), 2);
  health = Health();
  EXPECT_EQ(health.live_sequences(), 0);
  EXPECT_EQ(health.cache().used_blocks(), 0);
  EXPECT_GT(health.cache().miss_tokens(), 0);

  // SIGTERM while a run is in flight: it still completes, then the process exits 0.
  v1::RunRequest last;
  *last.add_items() = Item(4, 8, 1000);
  grpc::Status last_status;
  v1::RunResponse last_response;
  std::thread last_thread([&] { last_status = Run(last, &last_response); });
  absl::SleepFor(absl::Milliseconds(20));
  server_->Signal(SIGTERM);
  last_thread.join();
  EXPECT_TRUE(last_status.ok()) << last_status.error_message();
  EXPECT_EQ(last_response.results(0).steps_size(), 1000);
  EXPECT_EQ(server_->Wait(absl::Seconds(30)), 0);
}

// RunStream answers what Run answers, and sent steps before: progress updates whose steps, in
// order, begin the response's steps (never its last); the response comes last. A bad request fails
// the stream with Run's status.
TEST_P(WorkerProcessTest, RunStreamSendsEachStepBeforeTheResponse) {
  v1::RunRequest request;
  *request.add_items() = Item(1, 10, 24);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  std::unique_ptr<grpc::ClientReader<v1::RunUpdate>> reader = stub_->RunStream(&context, request);
  std::vector<v1::StepResult> streamed;
  std::optional<v1::RunResponse> response;
  v1::RunUpdate update;
  while (reader->Read(&update)) {
    ASSERT_FALSE(response.has_value()) << "nothing follows the response";
    if (update.has_progress()) {
      ASSERT_EQ(update.progress().results_size(), 1);
      EXPECT_EQ(update.progress().results(0).sequence_id(), 1u);
      for (const v1::StepResult& step : update.progress().results(0).steps()) {
        streamed.push_back(step);
      }
    } else {
      response = update.response();
    }
  }
  grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(response.has_value());
  ASSERT_EQ(response->results(0).steps_size(), 24);
  // Steps the worker held back (at most one update per millisecond) come with the response.
  ASSERT_GE(streamed.size(), 1u);
  ASSERT_LE(streamed.size(), 23u);
  for (size_t i = 0; i < streamed.size(); ++i) {
    EXPECT_EQ(streamed[i].SerializeAsString(),
              response->results(0).steps(static_cast<int>(i)).SerializeAsString());
  }
  // The same request by Run (a new sequence with the same prompt and seed) decodes the same.
  request.mutable_items(0)->set_sequence_id(2);
  v1::RunResponse unary;
  ASSERT_TRUE(Run(request, &unary).ok());
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(unary.results(0).steps(i).token_id(), response->results(0).steps(i).token_id());
  }

  v1::RunRequest bad;
  *bad.add_items() = Item(3, 4, 2);
  bad.mutable_items(0)->set_append(1, -5);
  grpc::ClientContext bad_context;
  std::unique_ptr<grpc::ClientReader<v1::RunUpdate>> bad_reader =
      stub_->RunStream(&bad_context, bad);
  EXPECT_FALSE(bad_reader->Read(&update));
  grpc::Status bad_status = bad_reader->Finish();
  EXPECT_EQ(bad_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad_status.error_message().find("items[0].append[1]"), std::string::npos)
      << bad_status.error_message();
}

INSTANTIATE_TEST_SUITE_P(KvDtypes, WorkerProcessTest, testing::Values("f32", "bf16"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace arbor::tools
