// `arbor demo`: the whole system on this machine, start to finish — a coordinator and workers
// on a real model (SmolLM2-135M-Instruct by default); a question answered with the server's
// default policy (the model's: CoT-decoding for SmolLM2) and its tree; a chat question answered
// by an entropix search job streamed with its strategies, its tree and the count of every
// strategy; and a clean shutdown.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "absl/strings/str_format.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "entropix/policy_config.h"
#include "policy/policy_convert.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "tools/local_cluster.h"

namespace arbor::tools {
namespace {

constexpr char kAnswerQuestion[] =
    "A shop sells pens for 3 dollars each. How much do 4 pens cost? Answer with a number.";
constexpr int kAnswerTokens = 48;
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

// One chat question: the answer streamed, then the job's tree. The job's record, or null after
// printing why (the exit code in `code`).
std::optional<v1::Job> AskAndShow(const ClientOptions& client, v1::GenerateRequest request,
                                  const char* question, int& code) {
  request.mutable_chat()->set_add_generation_prompt(true);
  v1::ChatMessage* message = request.mutable_chat()->add_messages();
  message->set_role("user");
  message->set_content(question);
  request.set_seed(kDemoSeed);
  printf("\nUser: %s\n\nAssistant: ", question);
  const Output output{std::cout, std::cerr};
  if (code = Generate(client, request, /*show_metrics=*/false, output); code != 0) return {};
  absl::StatusOr<v1::Job> job = LastJob(client);
  if (!job.ok()) {
    fprintf(stderr, "demo: %s\n", job.status().ToString().c_str());
    code = 1;
    return {};
  }
  printf("\nThe search tree of %s (committed path, branch points and their alternatives):\n\n",
         job->job_id().c_str());
  fflush(stdout);
  if (code = ShowTree(client, job->job_id(), TreeView{}, output); code != 0) return {};
  return *std::move(job);
}

int Demo(LocalCluster& cluster) {
  ClientOptions client = ClientOptionsFromFlags();
  client.coordinator = cluster.coordinator_address();
  int code = 0;
  // 1. The server's default policy; for SmolLM2 that is CoT-decoding (TRACE mode), which this
  // pattern tells where the answer is. Other policies ignore it.
  printf(
      "\n1. The server's default policy (for SmolLM2-135M-Instruct: CoT-decoding, the most likely "
      "first tokens each continued greedily, the answer decoded with the largest probability "
      "margin wins; docs/SEARCH_QUALITY.md).\n");
  v1::GenerateRequest answer;
  answer.set_max_tokens(kAnswerTokens);
  answer.mutable_policy()->mutable_trace()->set_answer_pattern(R"(-?\d+)");
  if (!AskAndShow(client, answer, kAnswerQuestion, code)) return code;

  // 2. Entropix search on request, with the published policy in full (the server's own search
  // policy is the model's fitted one, which branches far less): every strategy of the matrix.
  printf(
      "\n2. Entropix search on request (SEARCH mode: branch, insert a thinking token, "
      "backspace), with the published policy.\n");
  PrintThresholds();
  v1::GenerateRequest search;
  search.set_max_tokens(kDemoTokens);
  search.set_top_logprobs(3);
  *search.mutable_policy() = policy::PolicyToProto(entropix::PolicyConfig{});
  std::optional<v1::Job> job = AskAndShow(client, search, kDemoQuestion, code);
  if (!job) return code;
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
         options->model.c_str());
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
