#include "coordinator/service/job_registry.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace arbor::coordinator {

arbor::v1::Job JobRecord::ToProto(bool brief) const {
  arbor::v1::Job out;
  out.set_job_id(job_id);
  out.set_seed(seed);
  out.set_client_tag(client_tag);
  out.set_prompt_snippet(prompt_snippet);
  out.set_created_unix_ms(absl::ToUnixMillis(created));
  out.set_state(job->state());
  out.set_finish_reason(job->finish_reason());
  out.set_error(job->error());
  out.set_worker_id(job->worker_id());
  out.set_rehomed(job->rehomed());
  out.set_reprefilled(job->reprefilled());
  if (!brief) {
    *out.mutable_policy() = policy;
    *out.mutable_request() = job->ReplayRequest();
    out.set_text(job->text());
    const std::vector<int32_t> ids = job->token_ids();
    out.mutable_token_ids()->Add(ids.begin(), ids.end());
  }
  *out.mutable_usage() = job->usage();
  *out.mutable_timings() = job->timings();
  *out.mutable_strategies() = job->strategy_counts();
  return out;
}

namespace {

// A message's heap bytes: SpaceUsedLong counts the message object too, which its holder's
// sizeof already did.
size_t HeapBytes(const google::protobuf::Message& message) {
  return message.SpaceUsedLong() - sizeof(message);
}

size_t TreeBytes(const SearchTree& tree) {
  size_t bytes = 0;
  for (NodeId id = 0; id < tree.size(); ++id) {
    bytes += sizeof(Node) + HeapBytes(tree.node(id).metrics) +
             tree.TopLogprobs(id).size() * sizeof(TokenAlternative);
  }
  return bytes;
}

}  // namespace

size_t JobRecord::RetainedBytes() const {
  size_t bytes = sizeof(JobRecord) + job_id.capacity() + client_tag.capacity() + owner.capacity() +
                 HeapBytes(policy) + events.SpaceUsedBytes();
  // The job's spec is what its replay request carries; the run builder keeps the processors
  // and the constraint again, and the launcher's re-home callback the prompt.
  const arbor::v1::GenerateRequest request = job->ReplayRequest();
  bytes += sizeof(Job) + HeapBytes(request) + request.processors().SpaceUsedLong() +
           request.constraint().SpaceUsedLong() +
           request.tokens().token_ids_size() * sizeof(int32_t);
  // The committed text and tokens (the job's output and the tree's committed path).
  bytes += job->text().size() + 2 * job->token_ids().size() * sizeof(int32_t);
  job->ReadTree([&bytes](const SearchTree& tree) { bytes += TreeBytes(tree); });
  return bytes;
}

JobRegistry::JobRegistry(JobRegistryOptions options)
    : finished_jobs_(std::max(0, options.finished_jobs)),
      finished_job_bytes_(std::max<int64_t>(0, options.finished_job_bytes)),
      job_store_(options.job_store),
      admission_(options.admission, *options.metrics),
      finished_bytes_gauge_(options.metrics
                                ->AddGauge("arbor_coordinator_finished_job_bytes",
                                           "Bytes the finished jobs kept queryable retain "
                                           "(estimated; bounded by --finished_job_bytes).")
                                .Get()),
      instance_(absl::Uniform<uint16_t>(absl::BitGen())) {}

std::string JobRegistry::NewJobId() {
  absl::MutexLock lock(&ids_mu_);
  return absl::StrFormat("j%d-%04x%04x", next_job_number_++, instance_,
                         absl::Uniform<uint16_t>(random_));
}

absl::Status JobRegistry::Admit(std::shared_ptr<JobRecord> record) {
  const std::string job_id = record->job_id;
  {
    absl::MutexLock lock(&mu_);
    if (jobs_.contains(job_id)) {
      return absl::AlreadyExistsError(absl::StrCat("job ", job_id, " exists"));
    }
    // Known before it can start, so that its finish (possibly immediate) finds it.
    jobs_[job_id] = Entry{std::move(record), next_order_++, std::nullopt};
  }
  absl::StatusOr<Admitted> admitted = admission_.Admit(job_id);
  if (!admitted.ok()) {
    absl::MutexLock lock(&mu_);
    jobs_.erase(job_id);
    return admitted.status();
  }
  if (*admitted == Admitted::kRunNow) Start(job_id);
  return absl::OkStatus();
}

void JobRegistry::Start(const std::string& job_id) {
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it != jobs_.end()) job = it->second.record->job;
  }
  // A no-op for a job cancelled while queued. A job that finishes at once hands its slot on
  // from inside Start (Finished), so the chain is as deep as the queue at most.
  if (job != nullptr) job->Start();
}

void JobRegistry::Finished(const std::string& job_id) {
  std::optional<std::string> next = admission_.Release(job_id);
  std::shared_ptr<JobRecord> record;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it != jobs_.end() && !it->second.finished) record = it->second.record;
  }
  // Outside the lock: it takes the job's. A finished job's holdings do not change any more.
  const int64_t bytes = record == nullptr ? 0 : static_cast<int64_t>(record->RetainedBytes());
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (record != nullptr && it != jobs_.end() && !it->second.finished) {
      finished_.push_front(job_id);
      it->second.finished = finished_.begin();
      it->second.retained_bytes = bytes;
      finished_bytes_ += bytes;
    }
    Evict();
  }
  if (next) Start(*next);
}

void JobRegistry::Forget(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || !it->second.finished) return;
  DropFinished(it);
  finished_bytes_gauge_.Set(static_cast<double>(finished_bytes_));
}

void JobRegistry::DropFinished(absl::flat_hash_map<std::string, Entry>::iterator it) {
  finished_bytes_ -= it->second.retained_bytes;
  finished_.erase(*it->second.finished);
  jobs_.erase(it);
}

void JobRegistry::Evict() {
  while (static_cast<int>(finished_.size()) > finished_jobs_ ||
         (!finished_.empty() && finished_bytes_ > finished_job_bytes_)) {
    DropFinished(jobs_.find(finished_.back()));
  }
  finished_bytes_gauge_.Set(static_cast<double>(finished_bytes_));
}

int JobRegistry::finished_count() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(finished_.size());
}

int64_t JobRegistry::finished_bytes() const {
  absl::MutexLock lock(&mu_);
  return finished_bytes_;
}

namespace {

// The instance part of an id NewJobId gave out ("j12-" then 8 hex digits), if `job_id` is one.
std::optional<uint16_t> InstanceOf(absl::string_view job_id) {
  std::vector<absl::string_view> parts = absl::StrSplit(job_id, '-');
  uint32_t number = 0;
  uint32_t suffix = 0;
  if (parts.size() != 2 || !absl::ConsumePrefix(&parts[0], "j") ||
      !absl::SimpleAtoi(parts[0], &number) || parts[1].size() != 8 ||
      !absl::SimpleHexAtoi(parts[1], &suffix)) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(suffix >> 16);
}

}  // namespace

absl::Status JobRegistry::NotFound(const std::string& job_id) const {
  if (const std::optional<uint16_t> instance = InstanceOf(job_id);
      instance && *instance != instance_) {
    if (job_store_) {
      return absl::NotFoundError(absl::StrCat(
          "job_id: no job ", job_id,
          ": it was started by an earlier coordinator process and "
          "the job store does not have it (deleted by retention, or another store's)"));
    }
    return absl::NotFoundError(
        absl::StrCat("job_id: no job ", job_id,
                     ": it was started by an earlier coordinator process, and jobs live in the "
                     "coordinator's memory only; submit the request again"));
  }
  return absl::NotFoundError(
      absl::StrCat("job_id: no job ", job_id, " (unknown, or finished and evicted)"));
}

absl::StatusOr<std::shared_ptr<JobRecord>> JobRegistry::Find(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFound(job_id);
  if (it->second.finished) finished_.splice(finished_.begin(), finished_, *it->second.finished);
  return it->second.record;
}

std::vector<std::shared_ptr<JobRecord>> JobRegistry::List(
    int limit, const absl::flat_hash_set<arbor::v1::JobState>& states,
    const std::string& client_tag, const std::string* owner) const {
  std::vector<std::pair<uint64_t, std::shared_ptr<JobRecord>>> all;
  {
    absl::MutexLock lock(&mu_);
    all.reserve(jobs_.size());
    for (const auto& [id, entry] : jobs_) all.emplace_back(entry.order, entry.record);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second->created != b.second->created ? a.second->created > b.second->created
                                                  : a.first > b.first;
  });
  std::vector<std::shared_ptr<JobRecord>> out;
  for (auto& [order, record] : all) {
    if (static_cast<int>(out.size()) >= limit) break;
    if (!states.empty() && !states.contains(record->job->state())) continue;
    if (!client_tag.empty() && record->client_tag != client_tag) continue;
    if (owner != nullptr && record->owner != *owner) continue;
    out.push_back(std::move(record));
  }
  return out;
}

std::vector<std::shared_ptr<Job>> JobRegistry::JobsOn(const std::string& worker_id) const {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, entry] : jobs_) {
      if (!entry.finished) jobs.push_back(entry.record->job);
    }
  }
  // Outside the lock: a job's lock is never taken under the registry's.
  std::erase_if(jobs,
                [&](const std::shared_ptr<Job>& job) { return job->worker_id() != worker_id; });
  return jobs;
}

void JobRegistry::CancelAll() {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, entry] : jobs_) {
      if (!entry.finished) jobs.push_back(entry.record->job);
    }
  }
  for (const std::shared_ptr<Job>& job : jobs) job->Cancel();  // Outside the lock: it calls back.
}

}  // namespace arbor::coordinator
