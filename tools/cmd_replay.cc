// `arbor replay JOB [--policy_mode NAME] [--policy_file F]`: runs a finished job's request again
// (Generation.Replay: its prompt, seed, policy and limits) and says whether the new job grew the
// same search tree node for node, or where it first departs — how a user checks that a search
// they are debugging can be reproduced, and where a changed policy makes it go another way.
#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "tools/client.h"
#include "tools/commands.h"

ABSL_DECLARE_FLAG(std::string, policy_mode);  // tools/cmd_generate.cc
ABSL_DECLARE_FLAG(std::string, policy_file);

namespace arbor::tools {

int ReplayJob(const ClientOptions& client, const std::string& job_id,
              const arbor::v1::PolicyConfig& change, Output output) {
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  arbor::v1::ReplayRequest request;
  request.set_job_id(job_id);
  if (change.ByteSizeLong() > 0) *request.mutable_policy() = change;
  arbor::v1::ReplayResult result;
  grpc::ClientContext context;  // No deadline: the replay runs as long as the job did.
  const grpc::Status status = stub->Replay(&context, request, &result);
  if (!status.ok()) return ReportRpcError(status, "replay " + job_id, output.err);
  if (client.json) {
    output.out << ToJson(result) << "\n";
    return result.identical() ? 0 : 1;
  }
  const char* changed = result.policy_changed() ? ", with the changed policy," : "";
  if (result.identical()) {
    output.out << "identical: job " << result.replay_job_id() << changed << " grew the tree of "
               << job_id << " node for node (" << result.nodes() << " nodes)\n";
    return 0;
  }
  output.out << "different: job " << result.replay_job_id() << changed << " departs from "
             << job_id;
  if (result.has_first_difference()) {
    output.out << " at node " << result.first_difference().id() << " (position "
               << result.first_difference().position() << ")";
  }
  output.out << ":\n" << result.difference() << "\n";
  return 1;
}

int RunReplay(const Args& args) {
  if (args.size() != 1) {
    std::cerr << "usage: arbor replay JOB [--policy_mode NAME] [--policy_file FILE]\n";
    return 2;
  }
  absl::StatusOr<arbor::v1::PolicyConfig> change =
      PolicyFromFlags(absl::GetFlag(FLAGS_policy_mode), absl::GetFlag(FLAGS_policy_file));
  if (!change.ok()) {
    std::cerr << "arbor replay: " << change.status().message() << "\n";
    return 2;
  }
  return ReplayJob(ClientOptionsFromFlags(), args[0], *change, Output{std::cout, std::cerr});
}

}  // namespace arbor::tools
