// `arbor tree JOB --format text|json|dot`: a job's search tree as the server exports it.
#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "coordinator/tree_dot.h"
#include "coordinator/tree_json.h"
#include "coordinator/tree_text.h"
#include "tools/client.h"
#include "tools/commands.h"

ABSL_FLAG(std::string, format, "text", "tree: text (terminal view), json or dot (Graphviz).");
ABSL_DECLARE_FLAG(bool, show_metrics);

namespace arbor::tools {

int ShowTree(const ClientOptions& client, const std::string& job_id, const std::string& format,
             bool show_metrics, Output output) {
  if (format != "text" && format != "json" && format != "dot") {
    output.err << "arbor tree: --format: '" << format << "' is not text, json or dot\n";
    return 2;
  }
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  arbor::v1::GetTreeRequest request;
  request.set_job_id(job_id);
  request.set_include_top_logprobs(format != "text" || show_metrics);
  arbor::v1::Tree tree;
  const grpc::Status status = stub->GetTree(UnaryContext(client).get(), request, &tree);
  if (!status.ok()) return ReportRpcError(status, "tree " + job_id, output.err);
  if (format == "json") {
    output.out << coordinator::TreeToJson(tree) << "\n";
  } else if (format == "dot") {
    output.out << coordinator::TreeToDot(tree);
  } else {
    output.out << coordinator::TreeToText(tree, {show_metrics, client.color});
  }
  return 0;
}

int RunTree(const Args& args) {
  if (args.size() != 1) {
    std::cerr << "usage: arbor tree JOB [--format text|json|dot] [--show_metrics]\n";
    return 2;
  }
  return ShowTree(ClientOptionsFromFlags(), args[0], absl::GetFlag(FLAGS_format),
                  absl::GetFlag(FLAGS_show_metrics), Output{std::cout, std::cerr});
}

}  // namespace arbor::tools
