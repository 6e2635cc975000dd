// `arbor jobs`, `job JOB` and `cancel JOB`: inspect and stop jobs.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "tools/client.h"
#include "tools/commands.h"

ABSL_FLAG(int, limit, 0, "jobs: how many of the newest jobs to list; 0 = server default (100).");
ABSL_FLAG(std::string, state, "",
          "jobs: only jobs in these states, comma-separated (queued, running, finished, "
          "cancelled, failed); empty = any.");
ABSL_FLAG(std::string, tag, "", "jobs: only jobs with exactly this client tag; empty = any.");
ABSL_FLAG(std::string, owner, "",
          "jobs: only the jobs of this token name (admins; others see their own only).");
ABSL_FLAG(absl::Duration, since, absl::ZeroDuration(),
          "jobs: only jobs created this long ago or later (30m, 2h, 168h); 0 = any.");

namespace arbor::tools {
namespace {

std::string StateName(arbor::v1::JobState state) {
  const std::string name = arbor::v1::JobState_Name(state);
  return name.size() > 10 ? name.substr(10) : name;  // Drop "JOB_STATE_".
}

std::string Created(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms),
                          absl::LocalTimeZone());
}

void PrintJob(const arbor::v1::Job& job, std::ostream& out) {
  out << absl::StrFormat(
      "job:       %s\nstate:     %s\nfinish:    %s\nworker:    %s (re-homed %d times)\n"
      "seed:      %d\ncreated:   %s\ntokens:    %d prompt, %d generated, %d explored\n"
      "time:      %.3f s total, %.3f s to first token\n",
      job.job_id(), StateName(job.state()), arbor::v1::FinishReason_Name(job.finish_reason()),
      job.worker_id(), job.rehomed(), job.seed(), Created(job.created_unix_ms()),
      job.usage().prompt_tokens(), job.usage().generated_tokens(), job.usage().explored_tokens(),
      job.timings().total_us() / 1e6, job.timings().first_token_us() / 1e6);
  if (!job.client_tag().empty()) out << "tag:       " << job.client_tag() << "\n";
  if (!job.error().empty()) out << "error:     " << job.error() << "\n";
  if (!job.prompt().empty()) out << "prompt:\n" << job.prompt() << "\n";
  out << "text:\n" << job.text() << "\n";
}

}  // namespace

absl::StatusOr<arbor::v1::ListJobsRequest> ListJobsRequestFromFlags(absl::Time now) {
  arbor::v1::ListJobsRequest request;
  request.set_limit(absl::GetFlag(FLAGS_limit));
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_state), ',', absl::SkipWhitespace())) {
    arbor::v1::JobState state;
    const std::string full =
        absl::AsciiStrToUpper(absl::StrCat("JOB_STATE_", absl::StripAsciiWhitespace(name)));
    if (!arbor::v1::JobState_Parse(full, &state) || state == arbor::v1::JOB_STATE_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--state: '", name, "' is not one of queued, running, finished, cancelled, failed"));
    }
    request.add_states(state);
  }
  request.set_client_tag(absl::GetFlag(FLAGS_tag));
  request.set_owner(absl::GetFlag(FLAGS_owner));
  const absl::Duration since = absl::GetFlag(FLAGS_since);
  if (since < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--since: a duration back from now, such as 30m or 2h");
  }
  if (since > absl::ZeroDuration()) {
    request.set_created_after_unix_ms(absl::ToUnixMillis(now - since));
  }
  return request;
}

int ListJobs(const ClientOptions& client, const arbor::v1::ListJobsRequest& request,
             Output output) {
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  arbor::v1::ListJobsResponse response;
  const grpc::Status status = stub->ListJobs(UnaryContext(client).get(), request, &response);
  if (!status.ok()) return ReportRpcError(status, "jobs", output.err);
  if (client.json) {
    output.out << ToJson(response) << "\n";
    return 0;
  }
  output.out << absl::StrFormat("%-24s %-10s %-16s %8s %-19s %-12s %s\n", "JOB", "STATE",
                                "WORKER", "TOKENS", "CREATED", "TAG", "PROMPT");
  for (const arbor::v1::Job& job : response.jobs()) {
    output.out << absl::StrFormat("%-24s %-10s %-16s %8d %-19s %-12s %s\n", job.job_id(),
                                  StateName(job.state()), job.worker_id(),
                                  job.usage().generated_tokens(), Created(job.created_unix_ms()),
                                  job.client_tag().empty() ? "-" : job.client_tag(),
                                  job.prompt_snippet());
  }
  return 0;
}

int ShowJob(const ClientOptions& client, const std::string& job_id, Output output) {
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  arbor::v1::JobRef ref;
  ref.set_job_id(job_id);
  arbor::v1::Job job;
  const grpc::Status status = stub->GetJob(UnaryContext(client).get(), ref, &job);
  if (!status.ok()) return ReportRpcError(status, "job " + job_id, output.err);
  if (client.json) {
    output.out << ToJson(job) << "\n";
  } else {
    PrintJob(job, output.out);
  }
  return 0;
}

int CancelJob(const ClientOptions& client, const std::string& job_id, Output output) {
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  arbor::v1::JobRef ref;
  ref.set_job_id(job_id);
  arbor::v1::Job job;
  const grpc::Status status = stub->Cancel(UnaryContext(client).get(), ref, &job);
  if (!status.ok()) return ReportRpcError(status, "cancel " + job_id, output.err);
  if (client.json) {
    output.out << ToJson(job) << "\n";
  } else {
    output.out << "job " << job.job_id() << ": " << StateName(job.state()) << "\n";
  }
  return 0;
}

namespace {

// The commands that take exactly one JOB argument.
int WithJob(const Args& args, const char* name,
            int (*body)(const ClientOptions&, const std::string&, Output)) {
  if (args.size() != 1) {
    std::cerr << "usage: arbor " << name << " JOB\n";
    return 2;
  }
  return body(ClientOptionsFromFlags(), args[0], Output{std::cout, std::cerr});
}

}  // namespace

int RunJobs(const Args& args) {
  if (!args.empty()) {
    std::cerr << "usage: arbor jobs [--limit N] [--state S,...] [--tag TAG] [--owner NAME] "
                 "[--since DURATION]\n";
    return 2;
  }
  absl::StatusOr<arbor::v1::ListJobsRequest> request = ListJobsRequestFromFlags(absl::Now());
  if (!request.ok()) {
    std::cerr << "jobs: " << request.status().message() << "\n";
    return 2;
  }
  return ListJobs(ClientOptionsFromFlags(), *request, Output{std::cout, std::cerr});
}

int RunJob(const Args& args) { return WithJob(args, "job", ShowJob); }

int RunCancel(const Args& args) { return WithJob(args, "cancel", CancelJob); }

}  // namespace arbor::tools
