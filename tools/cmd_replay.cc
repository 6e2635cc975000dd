// `arbor replay JOB`: runs a finished job's request again (Job.request: its prompt, seed, policy
// and limits) and says whether the new job grew the same search tree node for node, or where it
// first departs — how a user checks that a search they are debugging can be reproduced.
#include <iostream>

#include "arbor/v1/generation.grpc.pb.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "views/tree_diff.h"

namespace arbor::tools {
namespace {

// The job's tree, with the alternatives when the job kept them.
grpc::Status GetTree(arbor::v1::Generation::Stub& stub, const ClientOptions& client,
                     const std::string& job_id, arbor::v1::Tree* tree) {
  arbor::v1::GetTreeRequest request;
  request.set_job_id(job_id);
  request.set_include_top_logprobs(true);
  return stub.GetTree(UnaryContext(client).get(), request, tree);
}

}  // namespace

int ReplayJob(const ClientOptions& client, const std::string& job_id, Output output) {
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  arbor::v1::JobRef ref;
  ref.set_job_id(job_id);
  arbor::v1::Job job;
  grpc::Status status = stub->GetJob(UnaryContext(client).get(), ref, &job);
  if (!status.ok()) return ReportRpcError(status, "replay " + job_id, output.err);
  if (job.state() == arbor::v1::JOB_STATE_QUEUED || job.state() == arbor::v1::JOB_STATE_RUNNING) {
    output.err << "arbor replay: job " << job_id << " has not finished; replay it once it has\n";
    return 2;
  }
  arbor::v1::Tree expected;
  status = GetTree(*stub, client, job_id, &expected);
  if (!status.ok()) return ReportRpcError(status, "tree " + job_id, output.err);

  arbor::v1::GenerateRequest request = job.request();
  request.set_client_tag("replay of " + job_id);
  grpc::ClientContext context;  // No deadline: the replay runs as long as the job did.
  auto reader = stub->Generate(&context, request);
  arbor::v1::GenerateEvent event;
  std::string replay_id;
  while (reader->Read(&event)) replay_id = event.job_id();
  status = reader->Finish();
  if (!status.ok()) return ReportRpcError(status, "replay " + job_id, output.err);
  arbor::v1::Tree actual;
  status = GetTree(*stub, client, replay_id, &actual);
  if (!status.ok()) return ReportRpcError(status, "tree " + replay_id, output.err);

  const std::optional<coordinator::TreeDifference> difference =
      coordinator::FirstTreeDifference(expected, actual);
  if (!difference) {
    output.out << "identical: job " << replay_id << " grew the tree of " << job_id
               << " node for node (" << expected.nodes_size() << " nodes)\n";
    return 0;
  }
  output.out << "different: job " << replay_id << " departs from " << job_id;
  if (difference->node) {
    output.out << " at node " << difference->node->id() << " (position "
               << difference->node->position() << ")";
  }
  output.out << ":\n" << difference->what << "\n";
  return 1;
}

int RunReplay(const Args& args) {
  if (args.size() != 1) {
    std::cerr << "usage: arbor replay JOB\n";
    return 2;
  }
  return ReplayJob(ClientOptionsFromFlags(), args[0], Output{std::cout, std::cerr});
}

}  // namespace arbor::tools
