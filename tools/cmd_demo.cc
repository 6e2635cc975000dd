// `arbor demo`: the whole system on this machine, start to finish — a coordinator and workers
// on a real model (SmolLM2-135M-Instruct by default), one chat question answered by a search job
// streamed with its strategies, the job's tree, the count of every strategy, and a clean
// shutdown.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_format.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "entropix/policy_config.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "tools/local_cluster.h"

namespace arbor::tools {
namespace {

constexpr char kDemoQuestion[] = "Give me three short tips for staying focused while studying.";
constexpr uint64_t kDemoSeed = 7;
constexpr int kDemoTokens = 160;

// The decision matrix the demo runs with, and why it is only a starting point for this model.
void PrintThresholds() {
  const entropix::Thresholds t;
  printf(
      "Entropix thresholds (docs/ARCHITECTURE.md §4.2 defaults, H = entropy, V = varentropy, in "
      "bits):\n"
      "  argmax    H < %.1f and V < %.1f     insert    H > %.1f and V < %.1f\n"
      "  branch    H < %.1f and V > %.1f     backspace H > %.1f and V > %.1f\n"
      "  otherwise adaptive sampling\n"
      "These are the published entropix values, set by hand for Llama 3's 128k-token vocabulary;\n"
      "they are not calibrated for this model, so read the strategies below as a demonstration.\n",
      t.lelv_entropy, t.lelv_varentropy, t.helv_entropy, t.helv_varentropy, t.lehv_entropy,
      t.lehv_varentropy, t.hehv_entropy, t.hehv_varentropy);
}

// The newest job's record (the demo's only one).
absl::StatusOr<v1::Job> LastJob(const ClientOptions& client) {
  auto stub = v1::Generation::NewStub(Connect(client.coordinator));
  v1::ListJobsRequest request;
  request.set_limit(1);
  v1::ListJobsResponse response;
  std::unique_ptr<grpc::ClientContext> context = UnaryContext(client);
  grpc::Status status = stub->ListJobs(context.get(), request, &response);
  if (!status.ok()) return absl::UnavailableError(status.error_message());
  if (response.jobs().empty()) return absl::NotFoundError("the coordinator lists no job");
  return response.jobs(0);
}

// Prints the strategy table; true when every strategy of the search appeared.
bool PrintStrategies(const v1::StrategyCounts& s) {
  const std::pair<const char*, int> rows[] = {
      {"argmax", s.argmax()},       {"adaptive", s.adaptive()},
      {"branch", s.branch()},       {"insert", s.insert()},
      {"backspace", s.backspace()}, {"hot_sample", s.hot_sample()},
      {"resample", s.resample()},   {"branch_sample", s.branch_sample()},
  };
  printf("\nStrategies taken:\n");
  for (const auto& [name, count] : rows) printf("  %-14s %5d\n", name, count);
  return s.argmax() > 0 && s.adaptive() > 0 && s.branch() > 0 && s.insert() > 0 &&
         s.backspace() > 0;
}

int Demo(LocalCluster& cluster) {
  ClientOptions client = ClientOptionsFromFlags();
  client.coordinator = cluster.coordinator_address();
  v1::GenerateRequest request;
  request.mutable_chat()->set_add_generation_prompt(true);
  v1::ChatMessage* question = request.mutable_chat()->add_messages();
  question->set_role("user");
  question->set_content(kDemoQuestion);
  request.set_max_tokens(kDemoTokens);
  request.set_seed(kDemoSeed);
  request.set_top_logprobs(3);
  printf("\n");
  PrintThresholds();
  printf("\nUser: %s\n\nAssistant: ", kDemoQuestion);
  const Output output{std::cout, std::cerr};
  if (int code = Generate(client, request, /*show_metrics=*/false, output); code != 0) {
    return code;
  }
  absl::StatusOr<v1::Job> job = LastJob(client);
  if (!job.ok()) {
    fprintf(stderr, "demo: %s\n", job.status().ToString().c_str());
    return 1;
  }
  printf("\nThe search tree of %s (committed path, branch points and their alternatives):\n\n",
         job->job_id().c_str());
  fflush(stdout);
  if (int code = ShowTree(client, job->job_id(), TreeView{}, output); code != 0) {
    return code;
  }
  if (!PrintStrategies(job->strategies())) {
    printf(
        "\nThis answer did not need every strategy (argmax, adaptive, branch, insert, "
        "backspace); other questions, seeds or a policy with other thresholds in the request reach "
        "the others.\n");
  } else {
    printf("\nEvery entropix strategy was taken at least once.\n");
  }
  return 0;
}

}  // namespace

int RunDemo(const Args& args) {
  if (!args.empty()) {
    fprintf(stderr, "usage: arbor demo [--model NAME|FILE|DIR] [--num_workers N]\n");
    return 2;
  }
  absl::StatusOr<LocalClusterOptions> options = LocalClusterOptionsFromFlags("demo");
  if (!options.ok()) {
    fprintf(stderr, "demo: %s\n", options.status().ToString().c_str());
    return 2;
  }
  printf("Starting a coordinator and %d worker(s) on %s ...\n", options->num_workers,
         options->model_dir.c_str());
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::Start(*options);
  if (!cluster.ok()) {
    fprintf(stderr, "demo: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  printf("coordinator %s, workers", (*cluster)->coordinator_address().c_str());
  for (const std::string& worker : (*cluster)->worker_addresses()) printf(" %s", worker.c_str());
  printf("\n");
  fflush(stdout);
  const int code = Demo(**cluster);
  if (absl::Status stopped = (*cluster)->Stop(absl::Seconds(10)); !stopped.ok()) {
    fprintf(stderr, "demo: unclean shutdown: %s (logs in %s)\n", stopped.ToString().c_str(),
            options->work_dir.c_str());
    return 1;
  }
  if (code == 0) {
    printf("Stopped cleanly.\n");
    std::filesystem::remove_all(options->work_dir);
  } else {
    fprintf(stderr, "demo: logs kept in %s\n", options->work_dir.c_str());
  }
  return code;
}

}  // namespace arbor::tools
