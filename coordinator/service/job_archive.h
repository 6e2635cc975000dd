// A job as the job store keeps it: what is recorded when it is accepted (its request as
// resolved) and when it ends (its Job message, events and whole tree), and how the public
// messages are answered from what was kept once the job has left memory.
#ifndef ARBOR_COORDINATOR_SERVICE_JOB_ARCHIVE_H_
#define ARBOR_COORDINATOR_SERVICE_JOB_ARCHIVE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/service/job_registry.h"
#include "coordinator/service/prompt.h"
#include "coordinator/store/job_store.h"

namespace arbor::coordinator {

// The tree of `record`'s job, or the part of it `part` names (its job_id is not read), as
// GetTree answers. NOT_FOUND for a root that is not a node of the tree.
absl::StatusOr<arbor::v1::Tree> ExportJobTree(const JobRecord& record,
                                              const arbor::v1::GetTreeRequest& part,
                                              const PromptCodec& prompts);

// The Job message GetJob answers for `record`: ToProto with the prompt decoded.
arbor::v1::Job JobMessage(const JobRecord& record, const PromptCodec& prompts);

// What the store records of `record` when it is accepted. `request` is what the client sent
// (for client_tag and omit_reasoning); `deadline` the job's own.
AcceptedJob AcceptedOf(const JobRecord& record, const arbor::v1::GenerateRequest& request,
                       const arbor::v1::ModelInfo& model, absl::Time deadline);

// What the store records of `record` once it has ended, at `at`.
FinishedJob FinishedOf(const JobRecord& record, const PromptCodec& prompts, absl::Time at);

// The Job message of a stored job: as recorded at its end, or, not ended yet, a queued job that
// a coordinator will run again (brief: without text, token ids, request and policy).
arbor::v1::Job StoredJobMessage(const StoredJob& stored, bool brief);

// The part of a stored job's whole tree that `part` names (root, max_depth, and top
// log-probabilities only when asked). NOT_FOUND for a root that is not a node of it,
// FAILED_PRECONDITION for a job that has not ended.
absl::StatusOr<arbor::v1::Tree> StoredTree(const StoredJob& stored,
                                           const arbor::v1::GetTreeRequest& part);

// The request that runs a stored job again, as Job::ReplayRequest gives a live one's: its request
// as it ran, with `change`'s policy fields in place of its own when `change` is given
// (INVALID_ARGUMENT naming the field, "policy.branch.width: ...", for a policy out of range).
absl::StatusOr<arbor::v1::GenerateRequest> StoredReplayRequest(
    const StoredJob& stored, const arbor::v1::PolicyConfig* change);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_JOB_ARCHIVE_H_
