// --log_format=json end to end: a coordinator and a worker started as real processes, as
// `arbor up` starts them (LocalCluster forwards the flag), write nothing but JSON objects, one a
// line, each with ts, level, process and msg; a finished and a cancelled job's lifecycle is in
// the coordinator's log under their job_id and worker, and the worker's lines name the worker.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "base/files.h"
#include "grpcpp/grpcpp.h"
#include "httplib.h"
#include "model/make_model.h"
#include "nlohmann/json.hpp"
#include "tools/local_cluster.h"

namespace arbor {
namespace {

using nlohmann::json;

const std::string kBin = ARBOR_BINARY_DIR "/bin";

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/json-logs-", getpid(), "-", name);
}

// Every line of `file` parsed; a line that is not a JSON object with the four line members of
// `process` fails the test.
std::vector<json> ReadJsonLines(const std::string& file, const std::string& process) {
  const absl::StatusOr<std::string> text = base::ReadFile(file);
  EXPECT_TRUE(text.ok()) << text.status();
  const std::regex rfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  std::vector<json> lines;
  std::istringstream in(text.value_or(""));
  for (std::string line; std::getline(in, line);) {
    json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) {
      ADD_FAILURE() << file << ": not a JSON object: " << line;
      continue;
    }
    EXPECT_TRUE(parsed["ts"].is_string() &&
                std::regex_match(parsed["ts"].get<std::string>(), rfc3339))
        << line;
    EXPECT_TRUE(parsed["level"].is_string()) << line;
    EXPECT_EQ(parsed["process"], process) << line;
    EXPECT_TRUE(parsed["msg"].is_string()) << line;
    lines.push_back(std::move(parsed));
  }
  return lines;
}

// The worker's /metrics answers where the cluster says it is.
void ExpectWorkerMetrics(const std::string& address) {
  httplib::Client metrics("http://" + address);
  const httplib::Result scraped = metrics.Get("/metrics");
  ASSERT_TRUE(scraped) << httplib::to_string(scraped.error());
  EXPECT_EQ(scraped->status, 200);
  EXPECT_NE(scraped->body.find("arbor_worker_kv_blocks"), std::string::npos);
}

// One job generated to its end, one cancelled while it runs; their ids.
void FinishOneJobAndCancelAnother(v1::Generation::Stub& stub, std::string* finished_id,
                                  std::string* cancelled_id) {
  v1::GenerateRequest request;
  request.mutable_tokens()->add_token_ids(1);
  request.mutable_tokens()->add_token_ids(2);
  request.set_max_tokens(6);
  request.mutable_stop()->set_ignore_eos(true);
  {
    grpc::ClientContext context;
    auto reader = stub.Generate(&context, request);
    v1::GenerateEvent event;
    while (reader->Read(&event)) {
      if (finished_id->empty()) *finished_id = event.job_id();
    }
    ASSERT_TRUE(reader->Finish().ok());
  }
  request.set_max_tokens(1500);
  v1::JobRef cancelled;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub.Submit(&context, request, &cancelled).ok());
  }
  grpc::ClientContext context;
  v1::Job job;
  ASSERT_TRUE(stub.Cancel(&context, cancelled, &job).ok());
  *cancelled_id = cancelled.job_id();
}

// Once the worker serves, every line of its log names it.
void ExpectWorkerLinesNamed(const std::string& log, const std::string& worker) {
  bool serving = false;
  int named = 0;
  for (const json& line : ReadJsonLines(log, "worker")) {
    if (serving) {
      EXPECT_EQ(line.value("worker", ""), worker) << line;
      ++named;
    }
    serving = serving || line["msg"].get<std::string>().starts_with("serving on");
  }
  EXPECT_GE(named, 2) << "the draining and stopped lines";
}

TEST(JsonLogs, EveryLineIsAnObjectAndJobsLogTheirLifecycle) {
  const std::string model_dir = TempPath("tiny-model");
  model::MakeModelOptions model;
  model.out_dir = model_dir;
  model.seed = 5;
  ASSERT_TRUE(model::MakeModel(model).ok());

  tools::LocalClusterOptions options;
  options.bin_dir = kBin;
  options.work_dir = TempPath("cluster");
  options.model = model_dir;
  options.log_level = "info";
  options.log_format = "json";
  options.worker_metrics = true;  // As `arbor up` starts them.
  absl::StatusOr<std::unique_ptr<tools::LocalCluster>> cluster =
      tools::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  // Each worker's /metrics is where the cluster says it is.
  ASSERT_EQ((*cluster)->worker_metrics_addresses().size(), 1u);
  ASSERT_NO_FATAL_FAILURE(ExpectWorkerMetrics((*cluster)->worker_metrics_addresses()[0]));
  const std::string worker = (*cluster)->worker_addresses()[0];
  auto stub = v1::Generation::NewStub(
      grpc::CreateChannel((*cluster)->coordinator_address(), grpc::InsecureChannelCredentials()));

  // One job generates to its end, another is cancelled while it runs.
  std::string finished_id, cancelled_id;
  ASSERT_NO_FATAL_FAILURE(FinishOneJobAndCancelAnother(*stub, &finished_id, &cancelled_id));
  ASSERT_TRUE((*cluster)->Stop(absl::Seconds(20)).ok());

  // job_id → the events logged for it, in order.
  std::map<std::string, std::vector<json>> jobs;
  for (json& line : ReadJsonLines((*cluster)->work_dir() + "/coordinator.log", "coordinator")) {
    if (line.contains("job_id")) jobs[line["job_id"]].push_back(std::move(line));
  }
  const auto events = [&](const std::string& job_id) {
    std::vector<std::string> names;
    for (const json& line : jobs[job_id]) {
      names.push_back(line.value("event", "?"));
      EXPECT_EQ(line["worker"], worker) << line;
    }
    return names;
  };
  ASSERT_FALSE(finished_id.empty());
  EXPECT_EQ(events(finished_id), (std::vector<std::string>{"submitted", "started", "finished"}));
  EXPECT_EQ(jobs[finished_id].back()["reason"], "FINISH_REASON_MAX_TOKENS");
  EXPECT_EQ(jobs[finished_id].back()["generated_tokens"], 6);
  EXPECT_EQ(events(cancelled_id), (std::vector<std::string>{"submitted", "started", "cancelled"}));
  EXPECT_EQ(jobs[cancelled_id].back()["reason"], "FINISH_REASON_CANCELLED");

  // Once it serves, every worker line names the worker (the coordinator knows it by that id).
  ExpectWorkerLinesNamed((*cluster)->work_dir() + "/worker0.log", worker);
  std::filesystem::remove_all(model_dir);
  std::filesystem::remove_all(options.work_dir);
}

}  // namespace
}  // namespace arbor
