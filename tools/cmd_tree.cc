// `arbor tree JOB --format text|json|dot`: a job's search tree as the server exports it; the
// text view can centre on one node (--around) and bound what it shows (--depth).
#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "views/tree_dot.h"
#include "views/tree_json.h"
#include "views/tree_text.h"

ABSL_FLAG(std::string, format, "text", "tree: text (terminal view), json or dot (Graphviz).");
ABSL_FLAG(std::optional<int32_t>, around, std::nullopt,
          "tree, text format: centre the view on node NODE: the committed path within --depth "
          "positions of it (of the path node its branch left from, when it is off the path), the "
          "branch points in that window, and its own line of descent when it is off the path.");
ABSL_FLAG(int, depth, 8,
          "tree, text format: tree levels shown, >= 1: positions on either side of the --around "
          "node, and tokens of each branch candidate's rollout.");
ABSL_DECLARE_FLAG(bool, show_metrics);

namespace arbor::tools {

int ShowTree(const ClientOptions& client, const std::string& job_id, const TreeView& view,
             Output output) {
  if (view.format != "text" && view.format != "json" && view.format != "dot") {
    output.err << "arbor tree: --format: '" << view.format << "' is not text, json or dot\n";
    return 2;
  }
  if (view.around && view.format != "text") {
    output.err << "arbor tree: --around: only with --format text\n";
    return 2;
  }
  if (view.around && *view.around < 0) {
    output.err << "arbor tree: --around: " << *view.around << " is not a node id (ids are >= 0)\n";
    return 2;
  }
  if (view.depth < 1) {
    output.err << "arbor tree: --depth: must be at least 1, got " << view.depth << "\n";
    return 2;
  }
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  arbor::v1::GetTreeRequest request;
  request.set_job_id(job_id);
  request.set_include_top_logprobs(view.format != "text" || view.show_metrics);
  arbor::v1::Tree tree;
  const grpc::Status status = stub->GetTree(UnaryContext(client).get(), request, &tree);
  if (!status.ok()) return ReportRpcError(status, "tree " + job_id, output.err);
  if (view.format == "json") {
    output.out << views::TreeToJson(tree) << "\n";
  } else if (view.format == "dot") {
    output.out << views::TreeToDot(tree);
  } else {
    views::TreeTextOptions options;
    options.show_metrics = view.show_metrics;
    options.color = client.color;
    options.around = view.around;
    options.depth = view.depth;
    absl::StatusOr<std::string> text = views::TreeToText(tree, options);
    if (!text.ok()) {  // The message starts with the option's name, the flag's.
      output.err << "arbor tree: --" << text.status().message() << "\n";
      return 2;
    }
    output.out << *text;
  }
  return 0;
}

int RunTree(const Args& args) {
  if (args.size() != 1) {
    std::cerr << "usage: arbor tree JOB [--format text|json|dot] [--show_metrics] "
                 "[--around NODE] [--depth N]\n";
    return 2;
  }
  TreeView view;
  view.format = absl::GetFlag(FLAGS_format);
  view.show_metrics = absl::GetFlag(FLAGS_show_metrics);
  view.around = absl::GetFlag(FLAGS_around);
  view.depth = absl::GetFlag(FLAGS_depth);
  return ShowTree(ClientOptionsFromFlags(), args[0], view, Output{std::cout, std::cerr});
}

}  // namespace arbor::tools
