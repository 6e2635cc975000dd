#include "coordinator/service/job_archive.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "coordinator/tree/tree_export.h"
#include "policy/policy_convert.h"

namespace arbor::coordinator {

absl::StatusOr<arbor::v1::Tree> ExportJobTree(const JobRecord& record,
                                              const arbor::v1::GetTreeRequest& part,
                                              const PromptCodec& prompts) {
  TreeExportOptions options;
  options.job_id = record.job_id;
  options.root = part.root();
  options.max_depth = part.max_depth();
  options.top_logprobs = part.include_top_logprobs() ? record.top_logprobs : 0;
  options.is_stop_token = [job = record.job](int32_t id) { return job->IsStopToken(id); };
  TokenTextFn token_text;
  if (prompts.has_tokenizer()) {
    token_text = [&prompts](int32_t id) { return prompts.TokenText(id); };
  }
  absl::StatusOr<arbor::v1::Tree> tree = absl::InternalError("tree not read");
  record.job->ReadTree(
      [&](const SearchTree& search_tree) { tree = ExportTree(search_tree, options, token_text); });
  // The request was checked: an error here is a root that is not a node of this tree.
  if (!tree.ok()) return absl::NotFoundError(absl::StrCat("root: ", tree.status().message()));
  return tree;
}

arbor::v1::Job JobMessage(const JobRecord& record, const PromptCodec& prompts) {
  arbor::v1::Job job = record.ToProto(/*brief=*/false);
  job.set_prompt(prompts.Decode(job.request().tokens().token_ids()));
  return job;
}

AcceptedJob AcceptedOf(const JobRecord& record, const arbor::v1::GenerateRequest& request,
                       const arbor::v1::ModelInfo& model, absl::Time deadline) {
  AcceptedJob out;
  out.job_id = record.job_id;
  out.owner = record.owner;
  out.client_tag = record.client_tag;
  out.model = model.name();
  out.model_fingerprint = model.fingerprint();
  out.created = record.created;
  out.request = record.job->ReplayRequest();
  out.request.set_client_tag(record.client_tag);
  out.request.set_omit_reasoning(request.omit_reasoning());
  out.deadline = deadline;
  return out;
}

FinishedJob FinishedOf(const JobRecord& record, const PromptCodec& prompts, absl::Time at) {
  FinishedJob out;
  out.job = JobMessage(record, prompts);
  out.events = record.events.events();
  arbor::v1::GetTreeRequest whole;
  whole.set_include_top_logprobs(true);
  // The whole tree always exports: its root is the prompt node.
  out.tree = ExportJobTree(record, whole, prompts).value_or(arbor::v1::Tree());
  out.at = at;
  return out;
}

arbor::v1::Job StoredJobMessage(const StoredJob& stored, bool brief) {
  arbor::v1::Job job;
  if (stored.finished) {
    job = stored.finished->job;
  } else {
    const AcceptedJob& accepted = stored.accepted;
    job.set_job_id(accepted.job_id);
    job.set_state(arbor::v1::JOB_STATE_QUEUED);
    job.set_seed(accepted.request.seed());
    job.set_client_tag(accepted.client_tag);
    job.set_created_unix_ms(absl::ToUnixMillis(accepted.created));
    *job.mutable_policy() = accepted.request.policy();
    *job.mutable_request() = accepted.request;
    job.mutable_request()->clear_client_tag();
    job.mutable_request()->clear_omit_reasoning();
  }
  if (brief) {
    job.clear_text();
    job.clear_token_ids();
    job.clear_request();
    job.clear_policy();
    job.clear_prompt();
  }
  return job;
}

namespace {

// Appends `id`'s node and, within `depth_left` levels (< 0: all), its descendants in pre-order.
void AppendSubtree(const absl::flat_hash_map<int32_t, const arbor::v1::TreeNode*>& nodes,
                   int32_t id, int depth_left, bool top_logprobs, arbor::v1::Tree& out) {
  std::vector<std::pair<int32_t, int>> stack = {{id, depth_left}};
  while (!stack.empty()) {
    const auto [next, left] = stack.back();
    stack.pop_back();
    auto it = nodes.find(next);
    if (it == nodes.end()) continue;
    arbor::v1::TreeNode& node = *out.add_nodes();
    node = *it->second;
    if (!top_logprobs) node.clear_top_logprobs();
    if (left == 0) continue;
    // Reversed onto the stack, so the first child comes out first.
    for (int c = node.children_size() - 1; c >= 0; --c)
      stack.emplace_back(node.children(c), left - 1);
  }
}

}  // namespace

absl::StatusOr<arbor::v1::Tree> StoredTree(const StoredJob& stored,
                                           const arbor::v1::GetTreeRequest& part) {
  if (!stored.finished) {
    return absl::FailedPreconditionError(
        absl::StrCat("job_id: job ", stored.accepted.job_id,
                     " has not run again yet since the coordinator restarted; retry shortly"));
  }
  const arbor::v1::Tree& whole = stored.finished->tree;
  absl::flat_hash_map<int32_t, const arbor::v1::TreeNode*> nodes;
  for (const arbor::v1::TreeNode& node : whole.nodes()) nodes[node.id()] = &node;
  if (!nodes.contains(part.root())) {
    return absl::NotFoundError(
        absl::StrCat("root: no node ", part.root(), " in job ", stored.accepted.job_id, "'s tree"));
  }
  arbor::v1::Tree out;
  out.set_job_id(whole.job_id());
  out.set_root(part.root());
  *out.mutable_prompt_token_ids() = whole.prompt_token_ids();
  AppendSubtree(nodes, part.root(), part.max_depth() == 0 ? -1 : part.max_depth(),
                part.include_top_logprobs(), out);
  return out;
}

absl::StatusOr<arbor::v1::GenerateRequest> StoredReplayRequest(
    const StoredJob& stored, const arbor::v1::PolicyConfig* change) {
  arbor::v1::GenerateRequest again = stored.accepted.request;
  // The client's own labels, which Job::ReplayRequest leaves out too.
  again.clear_client_tag();
  again.clear_omit_reasoning();
  if (change == nullptr) return again;
  // The stored policy is the resolved one, every field set: it is the base the change applies
  // to, as a live job's spec is.
  ASSIGN_OR_RETURN(const entropix::PolicyConfig ran,
                   policy::PolicyFromProto(again.policy(), entropix::PolicyConfig{}));
  ASSIGN_OR_RETURN(*again.mutable_policy(), policy::ChangedPolicy(ran, *change));
  return again;
}

}  // namespace arbor::coordinator
