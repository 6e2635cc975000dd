// The engine's forward step (engine.h): the rows of the active items (prefill chunks, scored
// tokens, decode tokens, within the step's token budget, shared fairly between jobs), one
// backend forward over them, each row's policy from its reduction, and the outcomes applied to
// items, sequences and timings.
// Part of class Engine, apart from admission, release and finishing (engine.cc).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "worker/engine/engine.h"
#include "worker/engine/engine_run.h"
#include "worker/engine/fair_share.h"

namespace arbor::worker {

absl::Status Engine::BuildRows(std::vector<Row>& rows) {
  std::vector<JobRows> jobs = JobsWithWork();
  const absl::Time now = absl::Now();
  if (jobs.size() > 1) last_shared_step_ = now;
  const bool shared =
      jobs.size() > 1 || (jobs.size() == 1 && now - last_shared_step_ < options_.share_linger);
  if (options_.shared_step_rows <= 0 || !shared) {
    // Nobody to share with, nor lately: decode rows, then prefill chunks in the rest of the
    // step, up to max_step_rows rows.
    std::vector<ActiveRun*> runs;
    for (auto& run : active_) runs.push_back(run.get());
    return AddJobRows(runs, options_.max_batch_tokens,
                      options_.max_step_rows > 0 ? std::optional(options_.max_step_rows)
                                                 : std::nullopt,
                      rows);
  }
  // Rows first (a decode row costs its policy too), then the tokens those rows would take: a
  // job decoding many items asks for few tokens once its rows are capped, which leaves a narrow
  // job's prompt room for a whole chunk.
  const size_t turn = share_turn_++;
  std::vector<int32_t> rows_wanted;
  for (const JobRows& job : jobs) {
    rows_wanted.push_back(job.decode_rows + static_cast<int32_t>(job.prefill_tokens.size()));
  }
  const std::vector<int32_t> row_shares =
      FairShares(rows_wanted, SharedStepRows(jobs.size()), turn);
  std::vector<int32_t> tokens_wanted;
  for (size_t j = 0; j < jobs.size(); ++j) {
    tokens_wanted.push_back(jobs[j].TokensOfRows(row_shares[j]));
  }
  const std::vector<int32_t> token_shares = FairShares(
      tokens_wanted, std::min(options_.shared_step_tokens, options_.max_batch_tokens), turn);
  for (size_t j = 0; j < jobs.size(); ++j) {
    RETURN_IF_ERROR(AddJobRows(jobs[j].runs, token_shares[j], row_shares[j], rows));
  }
  return absl::OkStatus();
}

int32_t Engine::SharedStepRows(size_t jobs) const {
  const int64_t crowd =
      static_cast<int64_t>(options_.shared_rows_per_job) * static_cast<int64_t>(jobs);
  const int64_t bound = options_.max_step_rows > 0 ? options_.max_step_rows : crowd;
  return static_cast<int32_t>(std::max<int64_t>(options_.shared_step_rows, std::min(crowd, bound)));
}

std::vector<Engine::JobRows> Engine::JobsWithWork() {
  std::vector<JobRows> jobs;
  absl::flat_hash_map<std::string, size_t> index;  // Of the named jobs in `jobs`.
  for (auto& run : active_) {
    if (run->failed) continue;
    const bool named = !run->job_id.empty();
    auto found = named ? index.find(run->job_id) : index.end();
    JobRows job;
    JobRows& into = found == index.end() ? job : jobs[found->second];
    into.runs.push_back(run.get());
    for (const ItemRun& item : run->items) {
      if (item.done()) continue;
      const int32_t wanted = TokensWanted(item);
      if (wanted == 1 && item.scores_left() == 0) {
        ++into.decode_rows;
      } else if (wanted > 0) {
        into.prefill_tokens.push_back(wanted);
      }
    }
    if (found != index.end() || job.decode_rows + job.prefill_tokens.size() == 0) continue;
    if (named) index[run->job_id] = jobs.size();
    jobs.push_back(std::move(job));
  }
  return jobs;
}

int32_t Engine::TokensWanted(const ItemRun& item) {
  const int32_t pending =
      static_cast<int32_t>((*sequences_.Get(item.sequence_id()))->pending.size());
  if (item.scores_left() > 0) return pending - 1;  // The last scored token is not run.
  // A prefill-only item leaves its last token pending (StopIfPrefilled).
  return item.item().max_steps() > 0 ? pending : std::max(pending - 1, 0);
}

absl::Status Engine::AddJobRows(const std::vector<ActiveRun*>& runs, int32_t budget,
                                std::optional<int32_t> max_rows, std::vector<Row>& rows) {
  const size_t first = rows.size();
  for (bool decode : {true, false}) {
    for (ActiveRun* run : runs) {
      for (size_t i = 0; i < run->items.size() && !run->failed; ++i) {
        ItemRun& item = run->items[i];
        if (item.done()) continue;
        const size_t pending = (*sequences_.Get(item.sequence_id()))->pending.size();
        if (decode != (pending == 1 && item.scores_left() == 0)) continue;
        if (max_rows && (budget <= 0 || rows.size() - first >= static_cast<size_t>(*max_rows))) {
          return absl::OkStatus();
        }
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
    const int32_t take = TokensWanted(item);
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
    ItemRun& item = row.run->items[row.item];
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

}  // namespace arbor::worker
