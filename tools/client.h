// The client side of the `arbor` CLI: dialling the coordinator, reporting RPC errors, printing
// messages, and the command bodies behind `generate`, `submit`, `watch`, `jobs`, `job`,
// `cancel`, `tree`, `workers` and `drain`. Bodies take their options and output streams as
// arguments (the Run* wrappers in commands.h read the flags), so tests drive them against an
// in-process server.
#ifndef ARBOR_TOOLS_CLIENT_H_
#define ARBOR_TOOLS_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.pb.h"
#include "google/protobuf/message.h"

namespace arbor::tools {

struct ClientOptions {
  std::string coordinator = "127.0.0.1:50051";
  bool json = false;                           // One JSON object per message instead of text.
  bool color = false;                          // ANSI colours (when stdout is a terminal).
  absl::Duration timeout = absl::Seconds(30);  // Unary calls; streams have no deadline.
};

// Where a command writes: results to `out`, errors to `err`.
struct Output {
  std::ostream& out;
  std::ostream& err;
};

// --coordinator, --json, --timeout_s; colour when stdout is a terminal and not JSON.
ClientOptions ClientOptionsFromFlags();

std::shared_ptr<grpc::Channel> Connect(const std::string& address);
// A context for a unary call, with the options' deadline.
std::unique_ptr<grpc::ClientContext> UnaryContext(const ClientOptions& options);

// Prints "arbor: WHAT: CODE: message" to `err` and returns 1, the exit code of a failed call.
int ReportRpcError(const grpc::Status& status, const std::string& what, std::ostream& err);

// Proto3 JSON on one line (lowerCamelCase names, enums by name).
std::string ToJson(const google::protobuf::Message& message);

// What `generate` and `submit` send, from the command's flags.
struct PromptOptions {
  std::string prompt;       // --prompt: text.
  std::string chat;         // --chat: JSON array of {"role", "content"}.
  std::string tokens;       // --tokens: comma-separated ids.
  int max_tokens = 0;       // 0 = server default.
  uint64_t seed = 0;        // 0 = server picks.
  std::string policy_mode;  // "", "search" or "canonical"; overrides the policy file's mode.
  std::string policy_file;  // --policy_file: a PolicyConfig as JSON (policy/policy_file.h).
  std::string json_schema;  // --json_schema: a file holding a JSON Schema the output follows.
  bool json_object = false;  // --json_object: the output is a JSON object.
};
// INVALID_ARGUMENT naming the flag when none or several prompt flags are given or one is
// malformed.
absl::StatusOr<arbor::v1::GenerateRequest> BuildGenerateRequest(const PromptOptions& options);

// The policy of --policy_mode (a named policy) with --policy_file's fields over it, the mode
// kept; empty when both are. INVALID_ARGUMENT naming the flag.
absl::StatusOr<arbor::v1::PolicyConfig> PolicyFromFlags(const std::string& policy_mode,
                                                        const std::string& policy_file);

// Streams Generate (or Watch of `job_id`) as tools/stream_printer.h prints it: the committed
// text coloured by strategy, a table row per event with `show_metrics`, or one JSON object per
// event; a summary at the end. 0 when the job finished without error.
int Generate(const ClientOptions& client, const arbor::v1::GenerateRequest& request,
             bool show_metrics, Output output);
int Watch(const ClientOptions& client, const std::string& job_id, bool show_metrics, Output output);
// Prints the new job's id.
int Submit(const ClientOptions& client, const arbor::v1::GenerateRequest& request, Output output);

// The ListJobs request of `arbor jobs`' flags (--limit, --state, --tag, --owner, --since, the
// last counted back from `now`); INVALID_ARGUMENT naming the flag.
absl::StatusOr<arbor::v1::ListJobsRequest> ListJobsRequestFromFlags(absl::Time now);
int ListJobs(const ClientOptions& client, const arbor::v1::ListJobsRequest& request,
             Output output);
int ShowJob(const ClientOptions& client, const std::string& job_id, Output output);
int CancelJob(const ClientOptions& client, const std::string& job_id, Output output);

// How `arbor tree` shows a tree.
struct TreeView {
  std::string format = "text";    // text, json or dot.
  bool show_metrics = false;      // text: the metrics table.
  std::optional<int32_t> around;  // text: centre on this node (views/tree_text.h).
  int depth = 8;                  // text: tree levels around the node and below branch points.
};
// Exit code 2 for a bad view (naming the flag: --format, --around, --depth).
int ShowTree(const ClientOptions& client, const std::string& job_id, const TreeView& view,
             Output output);

// Runs a finished job's request again, with `change`'s policy fields over the job's own when it
// has any, and compares the two trees node for node: exit code 0 when identical, 1 with the
// first difference printed (or an error).
int ReplayJob(const ClientOptions& client, const std::string& job_id,
              const arbor::v1::PolicyConfig& change, Output output);

int ListWorkers(const ClientOptions& client, Output output);
int DrainWorker(const ClientOptions& client, const std::string& worker_id, Output output);
int UndrainWorker(const ClientOptions& client, const std::string& worker_id, Output output);

}  // namespace arbor::tools

#endif  // ARBOR_TOOLS_CLIENT_H_
