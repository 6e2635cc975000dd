// `arbor generate`, `submit` and `watch`: submit a job and follow its event stream (printed by
// tools/stream_printer.h).
#include <cstdio>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "policy/policy_file.h"
#include "policy/policy_presets.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "tools/stream_printer.h"

ABSL_FLAG(std::string, prompt, "", "generate/submit: the prompt text.");
ABSL_FLAG(std::string, chat, "",
          "generate/submit: chat messages as JSON, e.g. "
          "'[{\"role\":\"user\",\"content\":\"Hi\"}]'.");
ABSL_FLAG(std::string, tokens, "", "generate/submit: prompt token ids, comma-separated.");
ABSL_FLAG(int, max_tokens, 0, "generate/submit: tokens to generate; 0 = server default.");
ABSL_FLAG(std::string, policy_mode, "",
          "generate/submit/replay: a named policy: greedy, sample, cot_decoding, eager, deepconf "
          "(CoT-decoding, entropy-gated branching, confidence-filtered voting), search, canonical "
          "or trace (default: the server's; replay: the job's own).");
ABSL_FLAG(std::string, policy_file, "",
          "generate/submit: the request's policy, an arbor.v1.PolicyConfig as JSON (the format "
          "`arbor calibrate` writes); fields left out keep the server's defaults (or "
          "--policy_mode's); replay: fields that replace the job's own. --policy_mode keeps its "
          "mode. up/demo: the coordinator's default "
          "policy file (its --policy_file), in place of the known model's fitted one.");
ABSL_FLAG(bool, show_metrics, false, "generate/watch/tree: print the metrics of every step.");
ABSL_FLAG(std::string, json_schema, "",
          "generate/submit: structured output: a file holding a JSON Schema the answer follows "
          "(decoding is constrained to it; the supported subset is in docs/API.md).");
ABSL_FLAG(bool, json_object, false, "generate/submit: structured output: any JSON object.");

namespace arbor::tools {
namespace {

using arbor::v1::GenerateEvent;

absl::Status FlagError(const std::string& flag, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", what));
}

// Reads a stream of events to the end; the exit code of generate/watch.
int Follow(const ClientOptions& client, bool show_metrics,
           grpc::ClientReaderInterface<GenerateEvent>& reader, const std::string& what,
           Output output) {
  StreamPrinter printer(client, show_metrics, output.out, output.err);
  GenerateEvent event;
  bool failed = false;
  while (reader.Read(&event)) {
    if (absl::Status printed = printer.Print(event); !printed.ok()) {
      output.err << "arbor: " << what << ": " << printed.message() << "\n";
      failed = true;
    }
    if (event.has_finished() && event.finished().reason() == arbor::v1::FINISH_REASON_ERROR) {
      failed = true;
    }
  }
  const grpc::Status status = reader.Finish();
  if (!status.ok()) return ReportRpcError(status, what, output.err);
  return failed ? 1 : 0;
}

}  // namespace

absl::StatusOr<arbor::v1::PolicyConfig> PolicyFromFlags(const std::string& policy_mode,
                                                        const std::string& policy_file) {
  arbor::v1::PolicyConfig policy;
  if (!policy_mode.empty()) {
    absl::StatusOr<arbor::v1::PolicyConfig> named = policy::NamedPolicy(policy_mode);
    if (!named.ok()) return FlagError("policy_mode", std::string(named.status().message()));
    policy = *std::move(named);
  }
  if (!policy_file.empty()) {
    absl::StatusOr<arbor::v1::PolicyConfig> file = policy::ReadPolicyFile(policy_file);
    if (!file.ok()) return FlagError("policy_file", std::string(file.status().message()));
    const bool named_mode = policy.has_mode();
    const arbor::v1::PolicyMode mode = policy.mode();
    policy.MergeFrom(*file);  // The file's fields over the named policy's.
    if (named_mode) policy.set_mode(mode);
  }
  return policy;
}

absl::StatusOr<arbor::v1::GenerateRequest> BuildGenerateRequest(const PromptOptions& options) {
  arbor::v1::GenerateRequest request;
  const int given = !options.prompt.empty() + !options.chat.empty() + !options.tokens.empty();
  if (given != 1) {
    return FlagError("prompt", "give exactly one of --prompt, --chat or --tokens");
  }
  if (!options.prompt.empty()) request.set_text(options.prompt);
  if (!options.chat.empty()) {
    const std::string wrapped = absl::StrCat("{\"messages\":", options.chat, "}");
    arbor::v1::ChatPrompt* chat = request.mutable_chat();
    if (!google::protobuf::util::JsonStringToMessage(wrapped, chat).ok()) {
      return FlagError("chat", "not a JSON array of {\"role\", \"content\"} objects");
    }
    chat->set_add_generation_prompt(true);
  }
  if (!options.tokens.empty()) {
    for (absl::string_view piece : absl::StrSplit(options.tokens, ',')) {
      int32_t id = 0;
      if (!absl::SimpleAtoi(piece, &id)) {
        return FlagError("tokens", absl::StrCat("'", std::string(piece), "' is not an integer"));
      }
      request.mutable_tokens()->add_token_ids(id);
    }
  }
  if (options.max_tokens < 0) return FlagError("max_tokens", "must be >= 0");
  request.set_max_tokens(options.max_tokens);
  request.set_seed(options.seed);
  ASSIGN_OR_RETURN(*request.mutable_policy(),
                   PolicyFromFlags(options.policy_mode, options.policy_file));
  if (!options.json_schema.empty() && options.json_object) {
    return FlagError("json_schema", "give --json_schema or --json_object, not both");
  }
  if (options.json_object) request.mutable_constraint()->set_json_object(true);
  if (!options.json_schema.empty()) {
    absl::StatusOr<std::string> schema = base::ReadFile(options.json_schema);
    if (!schema.ok()) return FlagError("json_schema", std::string(schema.status().message()));
    request.mutable_constraint()->set_json_schema(*std::move(schema));
  }
  return request;
}

int Generate(const ClientOptions& client, const arbor::v1::GenerateRequest& request,
             bool show_metrics, Output output) {
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  grpc::ClientContext context;
  auto reader = stub->Generate(&context, request);
  return Follow(client, show_metrics, *reader, "generate", output);
}

int Watch(const ClientOptions& client, const std::string& job_id, bool show_metrics,
          Output output) {
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  grpc::ClientContext context;
  arbor::v1::JobRef ref;
  ref.set_job_id(job_id);
  auto reader = stub->Watch(&context, ref);
  return Follow(client, show_metrics, *reader, "watch " + job_id, output);
}

int Submit(const ClientOptions& client, const arbor::v1::GenerateRequest& request, Output output) {
  auto stub = arbor::v1::Generation::NewStub(Connect(client.coordinator));
  arbor::v1::JobRef ref;
  const grpc::Status status = stub->Submit(UnaryContext(client).get(), request, &ref);
  if (!status.ok()) return ReportRpcError(status, "submit", output.err);
  output.out << (client.json ? ToJson(ref) : ref.job_id()) << "\n";
  return 0;
}

namespace {

// The seed flag is shared with make-model (where it seeds the weights) and defined there; read
// it by name so this file does not depend on that one.
uint64_t SeedFlag() {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag("seed");
  uint64_t seed = 0;
  if (flag != nullptr) seed = flag->TryGet<uint64_t>().value_or(0);
  return seed;
}

absl::StatusOr<arbor::v1::GenerateRequest> RequestFromFlags() {
  PromptOptions options;
  options.prompt = absl::GetFlag(FLAGS_prompt);
  options.chat = absl::GetFlag(FLAGS_chat);
  options.tokens = absl::GetFlag(FLAGS_tokens);
  options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.seed = SeedFlag();
  options.policy_mode = absl::GetFlag(FLAGS_policy_mode);
  options.policy_file = absl::GetFlag(FLAGS_policy_file);
  options.json_schema = absl::GetFlag(FLAGS_json_schema);
  options.json_object = absl::GetFlag(FLAGS_json_object);
  return BuildGenerateRequest(options);
}

int RunWithRequest(const Args& args, const char* name,
                   int (*body)(const ClientOptions&, const arbor::v1::GenerateRequest&, Output)) {
  if (!args.empty()) {
    std::cerr << "usage: arbor " << name << " --prompt TEXT | --chat JSON | --tokens IDS\n";
    return 2;
  }
  absl::StatusOr<arbor::v1::GenerateRequest> request = RequestFromFlags();
  if (!request.ok()) {
    std::cerr << "arbor " << name << ": " << request.status().message() << "\n";
    return 2;
  }
  return body(ClientOptionsFromFlags(), *request, Output{std::cout, std::cerr});
}

}  // namespace

int RunGenerate(const Args& args) {
  return RunWithRequest(args, "generate",
                        [](const ClientOptions& c, const arbor::v1::GenerateRequest& r, Output o) {
                          return Generate(c, r, absl::GetFlag(FLAGS_show_metrics), o);
                        });
}

int RunSubmit(const Args& args) { return RunWithRequest(args, "submit", Submit); }

int RunWatch(const Args& args) {
  if (args.size() != 1) {
    std::cerr << "usage: arbor watch JOB\n";
    return 2;
  }
  return Watch(ClientOptionsFromFlags(), args[0], absl::GetFlag(FLAGS_show_metrics),
               Output{std::cout, std::cerr});
}

}  // namespace arbor::tools
