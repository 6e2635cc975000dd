#include "tools/client.h"

#include <unistd.h>

#include <chrono>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "rpc/security.h"

ABSL_FLAG(std::string, coordinator, "127.0.0.1:50051",
          "Client commands: the coordinator's address, host:port.");
ABSL_FLAG(bool, json, false, "Client commands: print one JSON object per message.");
ABSL_FLAG(int, timeout_s, 30, "Client commands: deadline of unary calls, seconds.");

namespace arbor::tools {

ClientOptions ClientOptionsFromFlags() {
  ClientOptions options;
  options.coordinator = absl::GetFlag(FLAGS_coordinator);
  options.json = absl::GetFlag(FLAGS_json);
  options.color = !options.json && isatty(STDOUT_FILENO) == 1;
  options.timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  return options;
}

std::shared_ptr<grpc::Channel> Connect(const std::string& address) {
  return rpc::ProcessSecurity().Dial(address);
}

std::unique_ptr<grpc::ClientContext> UnaryContext(const ClientOptions& options) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(options.timeout));
  return context;
}

namespace {

// grpc::StatusCode has no name function; these are the canonical google.rpc.Code names.
const char* CodeName(grpc::StatusCode code) {
  static constexpr const char* kNames[] = {"OK",
                                           "CANCELLED",
                                           "UNKNOWN",
                                           "INVALID_ARGUMENT",
                                           "DEADLINE_EXCEEDED",
                                           "NOT_FOUND",
                                           "ALREADY_EXISTS",
                                           "PERMISSION_DENIED",
                                           "RESOURCE_EXHAUSTED",
                                           "FAILED_PRECONDITION",
                                           "ABORTED",
                                           "OUT_OF_RANGE",
                                           "UNIMPLEMENTED",
                                           "INTERNAL",
                                           "UNAVAILABLE",
                                           "DATA_LOSS",
                                           "UNAUTHENTICATED"};
  const int index = static_cast<int>(code);
  return index >= 0 && index < 17 ? kNames[index] : "UNKNOWN";
}

}  // namespace

int ReportRpcError(const grpc::Status& status, const std::string& what, std::ostream& err) {
  err << "arbor: " << what << ": " << CodeName(status.error_code()) << ": "
      << status.error_message() << "\n";
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return 1;
  // What to do next: gRPC's own words name the address but not the remedy.
  if (absl::StrContains(absl::AsciiStrToLower(status.error_message()), "failed to connect")) {
    err << "  No coordinator answers there: start one with `arbor up` (or arbor-coordinator), "
           "or give yours with --coordinator=HOST:PORT.\n";
  } else {
    err << "  The coordinator went away, or is resuming the job. A coordinator with --job_store "
           "runs its unfinished jobs again when it restarts: watch the job again then; without "
           "a store, submit again (the same --seed gives the same text).\n";
  }
  return 1;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) {
    // Only possible for messages with unresolvable Any fields, which Arbor's protos lack.
    return "{}";
  }
  return json;
}

}  // namespace arbor::tools
