#include "worker/engine/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "base/log_fields.h"
#include "base/status_macros.h"
#include "policy/constraint_convert.h"
#include "policy/policy_convert.h"
#include "worker/engine/engine_run.h"

namespace arbor::worker {

Engine::Engine(std::unique_ptr<Backend> backend, EngineOptions options)
    : backend_(std::move(backend)),
      options_(std::move(options)),
      kv_(backend_.get()),
      sequences_(&kv_),
      metrics_(*options_.metrics, options_.kv_bytes_per_token * backend_->kv_block_size()) {
  const model::ModelConfig& config = backend_->config();
  limits_.vocab_size = config.vocab_size;
  limits_.max_context =
      options_.max_context > 0 ? options_.max_context : config.max_position_embeddings;
  limits_.max_top_k = options_.max_top_k;
  item_limits_.vocab_size = config.vocab_size;
  item_limits_.max_context = limits_.max_context;
  item_limits_.eos_token_ids = options_.eos_token_ids;
  if (options_.vocabulary != nullptr) {
    constraints_ =
        std::make_unique<grammar::ConstraintCache>(options_.vocabulary, config.vocab_size);
  }
  PublishHealth();
  thread_ = std::thread([this] { Loop(); });
}

Engine::~Engine() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void Engine::Run(v1::RunRequest request, std::function<bool()> cancelled, RunCallback done,
                 ProgressCallback progress) {
  if (absl::Status valid = ValidateRunRequest(request, limits_); !valid.ok()) {
    done(valid);
    return;
  }
  absl::MutexLock lock(&mu_);
  queue_.push_back(QueuedRun{std::move(request), std::move(cancelled), std::move(done),
                             std::move(progress), absl::Now()});
}

void Engine::Release(std::vector<uint64_t> ids, std::function<void(int32_t)> done) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(QueuedRelease{std::move(ids), std::move(done)});
}

void Engine::ReleaseOwner(uint64_t owner, std::function<void(int32_t)> done) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(QueuedRelease{{}, std::move(done), owner});
}

v1::HealthResponse Engine::Health() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

void Engine::Loop() {
  while (true) {
    std::deque<std::variant<QueuedRun, QueuedRelease>> queue;
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      if (active_.empty()) {
        auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || !queue_.empty();
        };
        mu_.Await(absl::Condition(&has_work));
      }
      stopping = stopping_;
      queue.swap(queue_);
    }
    const absl::Status shutting_down = absl::UnavailableError("worker is shutting down");
    for (auto& queued : queue) {
      if (QueuedRelease* release = std::get_if<QueuedRelease>(&queued)) {
        ProcessRelease(*release);
      } else if (stopping) {
        std::get<QueuedRun>(queued).done(shutting_down);
      } else if (!broken_.ok()) {
        std::get<QueuedRun>(queued).done(broken_);
      } else {
        Admit(std::move(std::get<QueuedRun>(queued)));
      }
    }
    if (stopping) {
      for (auto& run : active_) run->done(shutting_down);
      for (auto& completion : completions_) completion();
      return;
    }
    if (!active_.empty()) Step();
    ReportProgress();
    FinishRuns();
    PublishHealth();
    for (auto& completion : completions_) completion();
    completions_.clear();
  }
}

void Engine::ProcessRelease(QueuedRelease& release) {
  if (release.owner != 0) {
    release.ids = sequences_.OwnedBy(release.owner);
    expired_sequences_ += static_cast<int64_t>(release.ids.size());
  }
  int32_t live = 0;
  for (uint64_t id : release.ids) {
    absl::StatusOr<SequenceState*> state = sequences_.Get(id);
    if (!state.ok()) continue;
    ++live;
    if ((*state)->busy) {
      deferred_releases_.push_back(id);
    } else {
      sequences_.Release(id).IgnoreError();
    }
  }
  completions_.push_back([done = std::move(release.done), live] { done(live); });
}

absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> Engine::ConstraintOf(
    const v1::RunItem& item, int index) {
  const std::string at = absl::StrCat("items[", index, "].constraint");
  if (!item.has_constraint()) return nullptr;
  if (constraints_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(at, ": this worker has no tokenizer, so it cannot constrain output"));
  }
  ASSIGN_OR_RETURN(const grammar::ConstraintSpec spec,
                   policy::ConstraintFromProto(item.constraint(), at));
  // Once the document is complete only an end token is allowed: there must be one.
  if (item.stop().stop_token_ids().empty() &&
      (item.stop().ignore_eos() || item_limits_.eos_token_ids.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("items[", index,
                     "].stop: a constrained item needs an end token (eos, not ignored, or "
                     "stop_token_ids)"));
  }
  absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> compiled = constraints_->Get(spec);
  if (!compiled.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".json_schema: ", compiled.status().message()));
  }
  return compiled;
}

absl::Status Engine::CheckItem(const v1::RunItem& item, int index) const {
  const std::string at = absl::StrCat("items[", index, "]");
  const uint64_t id = item.sequence_id();
  int32_t length = 0;
  if (item.has_fork_from()) {
    if (sequences_.Contains(id)) {
      return absl::AlreadyExistsError(absl::StrCat(at, ".sequence_id: ", id, " already exists"));
    }
    if (!sequences_.Contains(item.fork_from())) {
      return absl::NotFoundError(
          absl::StrCat(at, ".fork_from: sequence ", item.fork_from(), " does not exist"));
    }
    const int32_t parent = sequences_.Length(item.fork_from());
    length = item.has_fork_length() ? item.fork_length() : parent;
    if (length > parent) {
      return absl::InvalidArgumentError(absl::StrCat(at, ".fork_length: ", length,
                                                     " exceeds the length ", parent,
                                                     " of sequence ", item.fork_from()));
    }
  } else if (sequences_.Contains(id)) {
    length = sequences_.Length(id);
    if (item.has_truncate_to()) {
      if (item.truncate_to() > length) {
        return absl::InvalidArgumentError(absl::StrCat(at, ".truncate_to: ", item.truncate_to(),
                                                       " exceeds the length ", length,
                                                       " of sequence ", id));
      }
      length = item.truncate_to();
    }
  } else if (item.has_truncate_to() || item.continues()) {
    return absl::NotFoundError(absl::StrCat(
        at, ".sequence_id: ", id, " does not exist, so it cannot be ",
        item.has_truncate_to() ? "truncated" : "continued",
        " (released: its owner's lease lapsed or the worker restarted); create it again"));
  }
  if (length + item.append_size() > limits_.max_context) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".append: ", length, " + ", item.append_size(),
                     " tokens exceed the context of ", limits_.max_context));
  }
  if (item.score_tokens() > 0 && length + item.append_size() - item.score_tokens() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        at, ".score_tokens: the first scored token needs a token before it (append a prompt)"));
  }
  if (length + item.append_size() == 0 && item.max_steps() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".append: an empty sequence needs tokens before it can decode"));
  }
  return absl::OkStatus();
}

absl::Status Engine::PrepareItem(ActiveRun& run, int index) {
  ItemRun& item_run = run.items[index];
  const v1::RunItem& item = item_run.item();
  const uint64_t id = item.sequence_id();
  if (item.has_fork_from()) {
    const int32_t length =
        item.has_fork_length() ? item.fork_length() : sequences_.Length(item.fork_from());
    RETURN_IF_ERROR(sequences_.Fork(item.fork_from(), id, length));
    run.created[index] = true;
  } else if (!sequences_.Contains(id)) {
    RETURN_IF_ERROR(sequences_.Create(id));
    run.created[index] = true;
  } else if (item.has_truncate_to()) {
    RETURN_IF_ERROR(sequences_.Truncate(id, item.truncate_to()));
  }
  ASSIGN_OR_RETURN(SequenceState * state, sequences_.Get(id));
  if (run.created[index]) state->owner = run.owner;
  run.length_before[index] = sequences_.Length(id);
  run.last_sampled_before[index] = state->last_sampled;
  state->busy = true;
  run.prepared = index + 1;
  if (!item.append().empty()) {
    state->pending.insert(state->pending.end(), item.append().begin(), item.append().end());
    state->last_sampled = false;
  }
  const int32_t length = sequences_.Length(id);
  item_run.Begin(length, length > 0 ? sequences_.TokenAt(id, length - 1) : -1, state->last_sampled,
                 [&](int32_t position) { return sequences_.TokenAt(id, position); });
  if (!item_run.done() && (item.max_steps() > 0 || item.score_tokens() > 0)) {
    RETURN_IF_ERROR(sequences_.EnsurePending(id, item.score_tokens()));
  }
  StopIfPrefilled(item_run, *state);
  return absl::OkStatus();
}

void Engine::StopPrefilledItems() {
  for (auto& run : active_) {
    if (run->failed) continue;
    for (ItemRun& item : run->items) {
      if (!item.done()) StopIfPrefilled(item, **sequences_.Get(item.sequence_id()));
    }
  }
}

void Engine::StopIfPrefilled(ItemRun& item, const SequenceState& state) {
  // The last pending token waits for the step that needs its distribution, so it is not run
  // for an item that decodes nothing.
  if (item.item().max_steps() == 0 && item.scores_left() == 0 && state.pending.size() <= 1) {
    item.Stop(v1::STOP_REASON_MAX_STEPS);
  }
}

void Engine::Admit(QueuedRun queued) {
  auto run = std::make_unique<ActiveRun>();
  run->cancelled = std::move(queued.cancelled);
  run->done = std::move(queued.done);
  run->progress = std::move(queued.progress);
  run->owner = queued.request.owner_epoch();
  run->job_id = queued.request.job_id();
  run->timings.set_queue_us(absl::ToInt64Microseconds(absl::Now() - queued.submitted));
  // A caller already gone (its deadline passed while the run was queued) gets nothing created:
  // the sequences would only hold KV until someone released them.
  if (run->cancelled && run->cancelled()) {
    completions_.push_back([done = std::move(run->done)] {
      done(absl::CancelledError("the caller gave up before the run started"));
    });
    return;
  }
  const auto& items = queued.request.items();
  for (int i = 0; i < items.size(); ++i) {
    absl::Status checked = CheckItem(items[i], i);
    if (checked.ok() && !items[i].has_fork_from() && sequences_.Contains(items[i].sequence_id()) &&
        (*sequences_.Get(items[i].sequence_id()))->busy) {
      checked = absl::FailedPreconditionError(absl::StrCat(
          "items[", i, "].sequence_id: ", items[i].sequence_id(), " is busy in another run"));
    }
    absl::StatusOr<entropix::PolicyConfig> policy =
        policy::PolicyFromProto(items[i].policy(), options_.default_policy);
    if (checked.ok() && !policy.ok()) {  // PolicyFromProto also validates the result.
      checked = absl::InvalidArgumentError(
          absl::StrCat("items[", i, "].policy.", policy.status().message()));
    }
    absl::StatusOr<entropix::LogitProcessorConfig> processors = policy::LogitProcessorsFromProto(
        items[i].processors(), limits_.vocab_size, items[i].prompt_length(),
        absl::StrCat("items[", i, "].processors."));
    if (checked.ok() && !processors.ok()) checked = processors.status();
    absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> constraint =
        ConstraintOf(items[i], i);
    if (checked.ok() && !constraint.ok()) checked = constraint.status();
    if (!checked.ok()) {
      completions_.push_back([done = std::move(run->done), checked] { done(checked); });
      return;
    }
    run->items.emplace_back(items[i], *std::move(policy), *std::move(processors), item_limits_,
                            *std::move(constraint));
  }
  run->created.assign(run->items.size(), false);
  run->length_before.assign(run->items.size(), 0);
  run->last_sampled_before.assign(run->items.size(), false);
  run->cached_tokens.assign(run->items.size(), 0);
  for (size_t i = 0; i < run->items.size(); ++i) {
    if (absl::Status prepared = PrepareItem(*run, static_cast<int>(i)); !prepared.ok()) {
      run->failed = true;
      run->failure = prepared;
      break;
    }
  }
  active_.push_back(std::move(run));
}

void Engine::RollBack(ActiveRun& run) {
  for (size_t i = 0; i < run.prepared; ++i) {
    const uint64_t id = run.items[i].sequence_id();
    absl::StatusOr<SequenceState*> state = sequences_.Get(id);
    if (!state.ok()) continue;
    if (run.created[i]) {
      sequences_.Release(id).IgnoreError();
      continue;
    }
    // Appended or sampled tokens may already sit in the KV cache: cut back to the old length.
    if (sequences_.Length(id) > run.length_before[i]) {
      sequences_.Truncate(id, run.length_before[i]).IgnoreError();
    }
    (*state)->last_sampled = run.last_sampled_before[i];
    (*state)->busy = false;
  }
}

void Engine::ReportProgress() {
  const absl::Time now = absl::Now();
  for (const auto& active : active_) {
    ActiveRun& run = *active;
    // A run that answers now sends everything in its response instead.
    if (!run.progress || run.failed || now < run.next_progress ||
        std::all_of(run.items.begin(), run.items.end(),
                    [](const ItemRun& item) { return item.done(); })) {
      continue;
    }
    run.reported.resize(run.items.size(), 0);
    v1::RunProgress progress;
    bool any = false;
    for (size_t i = 0; i < run.items.size(); ++i) {
      ItemRun& item = run.items[i];
      v1::RunResult& result = *progress.add_results();
      result.set_sequence_id(item.sequence_id());
      const int32_t final_steps = item.FinalSteps();
      for (int32_t s = run.reported[i]; s < final_steps; ++s) {
        *result.add_steps() = item.result().steps(s);
      }
      any = any || final_steps > run.reported[i];
      run.reported[i] = std::max(run.reported[i], final_steps);
    }
    if (any) {
      run.next_progress = now + options_.min_progress_interval;
      completions_.push_back([callback = run.progress, progress = std::move(progress)]() mutable {
        callback(std::move(progress));
      });
    }
  }
}

void Engine::FinishRuns() {
  for (auto it = active_.begin(); it != active_.end();) {
    ActiveRun& run = **it;
    const bool all_done = std::all_of(run.items.begin(), run.items.end(),
                                      [](const ItemRun& item) { return item.done(); });
    if (!run.failed && !all_done) {
      ++it;
      continue;
    }
    if (run.failed) {
      RollBack(run);
      completions_.push_back(
          [done = std::move(run.done), failure = run.failure] { done(failure); });
    } else {
      v1::RunResponse response;
      for (size_t i = 0; i < run.items.size(); ++i) {
        v1::RunResult& result = run.items[i].result();
        const uint64_t id = result.sequence_id();
        result.set_length(sequences_.Length(id));
        result.set_cached_tokens(run.cached_tokens[i]);
        (*sequences_.Get(id))->busy = false;
        *response.add_results() = std::move(result);
      }
      *response.mutable_timings() = run.timings;
      completions_.push_back(
          [done = std::move(run.done), response = std::move(response)]() mutable {
            done(std::move(response));
          });
    }
    it = active_.erase(it);
  }
  std::vector<uint64_t> still_busy;
  for (uint64_t id : deferred_releases_) {
    absl::StatusOr<SequenceState*> state = sequences_.Get(id);
    if (!state.ok()) continue;
    if ((*state)->busy)
      still_busy.push_back(id);
    else
      sequences_.Release(id).IgnoreError();
  }
  deferred_releases_.swap(still_busy);
}

void Engine::CheckBackend() {
  if (!broken_.ok()) return;
  const absl::Status usable = backend_->Usable();
  if (usable.ok()) return;
  broken_ = absl::UnavailableError(absl::StrCat("this worker's ", backend_->name(),
                                                " backend can run nothing more (", usable.message(),
                                                "): restart the worker"));
  base::WithFields({{"event", "backend_failed"}}).Warn("{}", broken_.ToString());
}

void Engine::PublishHealth() {
  v1::HealthResponse health;
  health.set_serving(broken_.ok());
  health.set_live_sequences(static_cast<int32_t>(sequences_.size()));
  health.set_active_runs(static_cast<int32_t>(active_.size()));
  int64_t queued = 0;
  for (const auto& run : active_) {
    for (const ItemRun& item : run->items) queued += item.steps_left();
  }
  health.set_queued_tokens(queued);
  health.set_expired_sequences(expired_sequences_);
  const KvStats stats = kv_.stats();
  v1::CacheStats* cache = health.mutable_cache();
  cache->set_total_blocks(stats.total_blocks);
  cache->set_used_blocks(stats.used_blocks);
  cache->set_cached_blocks(stats.cached_blocks);
  cache->set_free_blocks(stats.free_blocks);
  cache->set_hit_tokens(stats.hit_tokens);
  cache->set_miss_tokens(computed_tokens_);
  metrics_.Publish(health);
  absl::MutexLock lock(&mu_);
  health_ = std::move(health);
}

}  // namespace arbor::worker
