#include "worker/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "base/log_fields.h"
#include "base/status_macros.h"
#include "policy/policy_convert.h"

namespace arbor::worker {

// A run being executed: its items and what is needed to undo its preparation.
struct Engine::ActiveRun {
  std::vector<ItemRun> items;
  // What a failed run restores: items [0, prepared) were prepared; a sequence the run created
  // (or forked) goes, any other returns to its length (after truncate_to) and flag before it.
  size_t prepared = 0;
  std::vector<bool> created;
  std::vector<int32_t> length_before;
  std::vector<bool> last_sampled_before;
  std::vector<int32_t> cached_tokens;  // Prefix-cache hits per item.
  std::function<bool()> cancelled;
  RunCallback done;
  uint64_t owner = 0;  // RunRequest.owner_epoch: owns the sequences the run creates.
  v1::RunTimings timings;
  bool failed = false;
  absl::Status failure;
};

// One row of a forward step and where its outputs go.
struct Engine::Row {
  ActiveRun* run = nullptr;
  size_t item = 0;
  bool prefill = false;
  std::vector<int32_t> tokens;
  int32_t start_pos = 0;
  bool distribution = false;  // Whether the row's next-token distribution is wanted.
  // A scoring row: the token its distribution scores (the sequence's next one), else -1.
  int32_t scored_token = -1;
  // What the backend reduces the distribution to, when it is wanted.
  RowReduction reduction;
  // Tokens to append to the sequence, or the failure of the row's metrics and policy.
  absl::StatusOr<std::vector<int32_t>> appended;
  // A scoring row's step, or the failure of its metrics.
  absl::StatusOr<v1::StepResult> scored;

  int32_t keys() const { return start_pos + static_cast<int32_t>(tokens.size()); }
};

Engine::Engine(std::unique_ptr<Backend> backend, EngineOptions options)
    : backend_(std::move(backend)),
      options_(std::move(options)),
      kv_(backend_.get()),
      sequences_(&kv_),
      metrics_(*options_.metrics) {
  const model::ModelConfig& config = backend_->config();
  limits_.vocab_size = config.vocab_size;
  limits_.max_context =
      options_.max_context > 0 ? options_.max_context : config.max_position_embeddings;
  limits_.max_top_k = options_.max_top_k;
  item_limits_.vocab_size = config.vocab_size;
  item_limits_.max_context = limits_.max_context;
  item_limits_.eos_token_ids = options_.eos_token_ids;
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

void Engine::Run(v1::RunRequest request, std::function<bool()> cancelled, RunCallback done) {
  if (absl::Status valid = ValidateRunRequest(request, limits_); !valid.ok()) {
    done(valid);
    return;
  }
  absl::MutexLock lock(&mu_);
  queue_.push_back(
      QueuedRun{std::move(request), std::move(cancelled), std::move(done), absl::Now()});
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
  item_run.Begin(length, length > 0 ? sequences_.TokenAt(id, length - 1) : -1, state->last_sampled);
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
  run->owner = queued.request.owner_epoch();
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
        rpc::PolicyFromProto(items[i].policy(), options_.default_policy);
    if (checked.ok() && !policy.ok()) {  // PolicyFromProto also validates the result.
      checked = absl::InvalidArgumentError(
          absl::StrCat("items[", i, "].policy.", policy.status().message()));
    }
    if (!checked.ok()) {
      completions_.push_back([done = std::move(run->done), checked] { done(checked); });
      return;
    }
    run->items.emplace_back(items[i], *std::move(policy), item_limits_);
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

absl::Status Engine::BuildRows(std::vector<Row>& rows) {
  int32_t budget = options_.max_batch_tokens;
  // Decode rows first (one token each, always admitted), then prefill chunks and scoring rows
  // in arrival order.
  for (bool decode : {true, false}) {
    for (auto& run : active_) {
      for (size_t i = 0; i < run->items.size() && !run->failed; ++i) {
        ItemRun& item = run->items[i];
        if (item.done()) continue;
        const size_t pending = (*sequences_.Get(item.sequence_id()))->pending.size();
        if (decode != (pending == 1 && item.scores_left() == 0)) continue;
        RETURN_IF_ERROR(decode ? AddRow(*run, i, 1, rows, budget)
                               : AddPrefillRows(*run, i, rows, budget));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Engine::AddPrefillRows(ActiveRun& run, size_t index, std::vector<Row>& rows,
                                    int32_t& budget) {
  ItemRun& item = run.items[index];
  const SequenceState& state = **sequences_.Get(item.sequence_id());
  const int32_t pending = static_cast<int32_t>(state.pending.size());
  const int32_t scores = item.scores_left();
  if (scores == 0) {
    // A prefill-only item leaves its last token pending (StopIfPrefilled).
    const int32_t take = item.item().max_steps() > 0 ? pending : pending - 1;
    return budget > 0 && take > 0 ? AddRow(run, index, std::min(budget, take), rows, budget)
                                  : absl::OkStatus();
  }
  // Plain prefill up to the token before the first scored one, then one row per token whose
  // distribution scores the next: the token before the first scored one, then the scored ones
  // but the last.
  const int32_t plain = pending - scores - 1;
  if (plain > 0 && budget > 0) {
    RETURN_IF_ERROR(AddRow(run, index, std::min(budget, plain), rows, budget));
    if (plain > budget || run.failed) return absl::OkStatus();
  }
  for (int32_t s = 0; s < scores && budget > 0 && !run.failed; ++s) {
    RETURN_IF_ERROR(AddRow(run, index, 1, rows, budget));
  }
  return absl::OkStatus();
}

absl::Status Engine::AddRow(ActiveRun& run, size_t index, int32_t take, std::vector<Row>& rows,
                            int32_t& budget) {
  ItemRun& item = run.items[index];
  SequenceState* state = *sequences_.Get(item.sequence_id());
  const bool decode = state->pending.size() == 1 && item.scores_left() == 0;
  // The row's distribution is wanted when it scores the next pending token (every scoring row
  // leaves at least the scored token pending) or when it ends the pending tokens of an item
  // that decodes.
  const bool scoring = item.scores_left() > 0 &&
                       static_cast<int32_t>(state->pending.size()) - take <= item.scores_left();
  absl::StatusOr<SequenceStore::Chunk> chunk = sequences_.TakePending(item.sequence_id(), take);
  if (!chunk.ok()) {
    if (chunk.status().code() != absl::StatusCode::kResourceExhausted) return chunk.status();
    // Prefill that cannot fit fails the run whole; a decode step ends its item.
    if (decode && !item.result().steps().empty()) {
      item.Stop(v1::STOP_REASON_KV_EXHAUSTED);
    } else {
      run.failed = true;
      run.failure = chunk.status();
    }
    return absl::OkStatus();
  }
  run.cached_tokens[index] += chunk->hits;
  budget -= static_cast<int32_t>(chunk->tokens.size());
  if (chunk->tokens.empty()) return absl::OkStatus();  // Whole chunk came from the prefix cache.
  Row row;
  row.run = &run;
  row.item = index;
  row.prefill = !decode;
  row.start_pos = chunk->start_pos;
  row.tokens = std::move(chunk->tokens);
  if (scoring) {
    row.distribution = true;
    row.scored_token = state->pending.front();
  } else {
    row.distribution = state->pending.empty() && item.item().max_steps() > 0;
  }
  rows.push_back(std::move(row));
  return absl::OkStatus();
}

void Engine::Step() {
  for (auto& run : active_) {
    if (!run->failed && run->cancelled && run->cancelled()) {
      for (ItemRun& item : run->items) item.Stop(v1::STOP_REASON_CANCELLED);
    }
  }
  std::vector<Row> rows;
  absl::Status built = BuildRows(rows);
  if (rows.empty() && built.ok()) return StopPrefilledItems();
  const std::vector<ForwardRow> forward = ForwardRowsOf(rows);
  const absl::Time start = absl::Now();
  absl::Status status = built.ok() ? backend_->Forward(forward) : built;
  if (built.ok() && !status.ok()) {
    CheckBackend();
    if (!broken_.ok()) status = broken_;
  }
  if (status.ok()) ApplyPolicies(rows);
  for (Row& row : rows) TakeRowResult(row, status);
  StopPrefilledItems();
  RecordStepTime(rows, absl::ToInt64Microseconds(absl::Now() - start), built.ok());
}

std::vector<ForwardRow> Engine::ForwardRowsOf(std::vector<Row>& rows) {
  std::vector<ForwardRow> forward;
  forward.reserve(rows.size());
  for (Row& row : rows) {
    ForwardRow f;
    f.tokens = row.tokens;
    f.start_pos = row.start_pos;
    const ItemRun& item = row.run->items[row.item];
    f.block_table = (*kv_.Find(static_cast<SeqId>(item.sequence_id())))->blocks;
    if (row.distribution) {
      row.reduction.request =
          row.scored_token >= 0 ? item.ScoreRequest(row.scored_token) : item.DecodeRequest();
      f.reduction = &row.reduction;
    }
    forward.push_back(f);
  }
  return forward;
}

void Engine::ApplyPolicies(std::vector<Row>& rows) {
  // The policy per row, from its reduction, in parallel on the backend's host threads: rows belong
  // to distinct items and sampling is keyed by (seed, position, branch), so the outcome does not
  // depend on the order. Only the item is touched here; sequences are updated after, serially.
  backend_->HostParallelFor(static_cast<int64_t>(rows.size()), [&](int64_t r) {
    Row& row = rows[r];
    if (!row.distribution || row.run->failed) return;
    ItemRun& item = row.run->items[row.item];
    if (row.scored_token >= 0) {
      row.scored = item.ScoreStep(row.reduction, row.keys(), row.scored_token);
    } else {
      row.appended = item.OnDistribution(row.reduction);
    }
  });
}

void Engine::TakeRowResult(Row& row, const absl::Status& status) {
  ActiveRun& run = *row.run;
  computed_tokens_ += static_cast<int64_t>(row.tokens.size());
  if (!status.ok()) {
    run.failed = true;
    run.failure = status;
    return;
  }
  if (!row.distribution || run.failed) return;
  ItemRun& item = run.items[row.item];
  if (row.scored_token >= 0) {  // Rows of one item come in position order.
    if (row.scored.ok()) {
      item.AddScored(*std::move(row.scored));
    } else {
      run.failed = true;
      run.failure = row.scored.status();
    }
    return;
  }
  const absl::StatusOr<std::vector<int32_t>>& appended = row.appended;
  if (!appended.ok()) {
    run.failed = true;
    run.failure = appended.status();
    return;
  }
  SequenceState* state = *sequences_.Get(item.sequence_id());
  state->pending.insert(state->pending.end(), appended->begin(), appended->end());
  metrics_.OnGenerated(static_cast<int64_t>(appended->size()));
  const auto& steps = item.result().steps();
  state->last_sampled =
      !appended->empty() && steps[steps.size() - 1].strategy() != v1::STRATEGY_INSERT;
}

void Engine::RecordStepTime(const std::vector<Row>& rows, int64_t elapsed_us, bool forwarded) {
  // The step's time (forward, metrics, policy) counts once per run that took part: as prefill
  // when any of its rows was prefill, else as decode.
  absl::flat_hash_map<ActiveRun*, bool> took_part;
  int64_t step_tokens = 0;
  for (const Row& row : rows) {
    took_part[row.run] |= row.prefill;
    step_tokens += static_cast<int64_t>(row.tokens.size());
  }
  if (forwarded) {
    metrics_.OnStep(elapsed_us * 1e-6, static_cast<int64_t>(rows.size()), step_tokens);
  }
  for (auto [run, prefill] : took_part) {
    v1::RunTimings& t = run->timings;
    if (prefill) {
      t.set_prefill_us(t.prefill_us() + elapsed_us);
    } else {
      t.set_decode_us(t.decode_us() + elapsed_us);
    }
    t.set_forward_steps(t.forward_steps() + 1);
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
