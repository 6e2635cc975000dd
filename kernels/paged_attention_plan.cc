#include "kernels/paged_attention_plan.h"

#include <algorithm>
#include <utility>

namespace arbor::kernels {
namespace {

// A sequence with at least this many query tokens gets panels of all its keys: the transposition
// is one pass over them, which kPanelTokens · group queries then meet.
constexpr int64_t kPanelTokens = kBlockTokens;
// A sibling group gets panels of its shared keys when its rows bring this many queries.
constexpr int64_t kPanelQueries = 16;

class Planner {
 public:
  Planner(const PagedBatch& batch, int64_t kv_heads, int64_t group, int64_t block_size, bool panels,
          int64_t threads)
      : batch_(batch),
        kv_heads_(kv_heads),
        group_(group),
        block_size_(block_size),
        panels_(panels),
        threads_(std::max<int64_t>(threads, 1)) {}

  AttentionPlan Plan() {
    std::vector<std::pair<int32_t, int64_t>> decode;  // (first block, seq) of each decode row.
    for (int64_t seq = 0; seq < batch_.num_seqs; ++seq) {
      const int64_t tokens = batch_.q_start[seq + 1] - batch_.q_start[seq];
      if (tokens == 1 && batch_.block_start[seq + 1] > batch_.block_start[seq]) {
        decode.emplace_back(batch_.block_ids[batch_.block_start[seq]], seq);
      } else if (tokens > 0) {
        AddBlocks(seq);
      }
    }
    std::sort(decode.begin(), decode.end());
    for (size_t i = 0; i < decode.size();) {
      size_t end = i;
      std::vector<int64_t> seqs;
      for (; end < decode.size() && decode[end].first == decode[i].first; ++end) {
        seqs.push_back(decode[end].second);
      }
      AddDecodeRows(seqs);
      i = end;
    }
    SplitHeads();
    std::stable_sort(
        plan_.units.begin(), plan_.units.end(),
        [](const AttentionUnit& a, const AttentionUnit& b) { return a.cost > b.cost; });
    return std::move(plan_);
  }

 private:
  int64_t Keys(int64_t seq, int64_t token) const { return PagedPosition(batch_, seq, token) + 1; }

  // A row set: rows [rows_begin, end of plan_.rows), its units made by SplitHeads.
  void AddUnits(int64_t rows_begin, int64_t table_keys, int64_t panel_set) {
    const int64_t rows_end = static_cast<int64_t>(plan_.rows.size());
    int64_t cost = 0;
    for (int64_t r = rows_begin; r < rows_end; ++r) {
      cost += Keys(plan_.rows[r].seq, plan_.rows[r].token);
    }
    sets_.push_back({rows_begin, rows_end, table_keys, panel_set, 0, kv_heads_, cost});
  }

  // Each row set's units: one per kv head with panels (their panels are per kv head, and the
  // keys meet many queries); without, kv_heads / parts heads each, parts enough for two units per
  // thread (so that the heaviest-first units end about together), all heads in one where the row
  // sets alone are that many.
  void SplitHeads() {
    if (sets_.empty()) return;
    const int64_t sets = static_cast<int64_t>(sets_.size());
    const int64_t parts = std::min(kv_heads_, (2 * threads_ + sets - 1) / sets);
    for (const AttentionUnit& set : sets_) {
      const int64_t width = set.panel_set >= 0 ? 1 : (kv_heads_ + parts - 1) / parts;
      for (int64_t h = 0; h < kv_heads_; h += width) {
        AttentionUnit unit = set;
        unit.kv_head = h;
        unit.kv_heads = std::min(width, kv_heads_ - h);
        unit.cost = set.cost * unit.kv_heads;
        plan_.units.push_back(unit);
      }
    }
  }

  int64_t AddPanelSet(int64_t seq, int64_t keys) {
    plan_.panel_sets.push_back({seq, keys});
    return static_cast<int64_t>(plan_.panel_sets.size()) - 1;
  }

  // A prompt or extend chunk: its tokens kBlockTokens at a time.
  void AddBlocks(int64_t seq) {
    const int64_t first = batch_.q_start[seq], last = batch_.q_start[seq + 1];
    const int64_t panel_set =
        panels_ && last - first >= kPanelTokens ? AddPanelSet(seq, batch_.kv_len[seq]) : -1;
    for (int64_t begin = first; begin < last; begin += kBlockTokens) {
      const int64_t end = std::min(begin + kBlockTokens, last);
      const int64_t rows_begin = static_cast<int64_t>(plan_.rows.size());
      for (int64_t t = begin; t < end; ++t) plan_.rows.push_back({t, seq});
      AddUnits(rows_begin, Keys(seq, end - 1), panel_set);
    }
  }

  // Decode rows whose tables begin with the same block: those sharing at least a tile of keys
  // in units of up to kGroupRows, any other alone.
  void AddDecodeRows(const std::vector<int64_t>& seqs) {
    const int64_t shared = SharedKeys(seqs);
    if (seqs.size() < 2 || shared < kTileKeys) {
      for (int64_t seq : seqs) {
        plan_.rows.push_back({batch_.q_start[seq], seq});
        AddUnits(static_cast<int64_t>(plan_.rows.size()) - 1, Keys(seq, batch_.q_start[seq]), -1);
      }
      return;
    }
    const int64_t count = static_cast<int64_t>(seqs.size());
    const int64_t panel_set =
        panels_ && count * group_ >= kPanelQueries ? AddPanelSet(seqs[0], shared) : -1;
    for (int64_t begin = 0; begin < count; begin += kGroupRows) {
      const int64_t rows_begin = static_cast<int64_t>(plan_.rows.size());
      for (int64_t i = begin; i < std::min(begin + kGroupRows, count); ++i) {
        plan_.rows.push_back({batch_.q_start[seqs[i]], seqs[i]});
      }
      AddUnits(rows_begin, shared, panel_set);
    }
  }

  // Keys every sequence of `seqs` (decode rows) reads from the same blocks: their tables' common
  // leading blocks, no more than any row's keys.
  int64_t SharedKeys(const std::vector<int64_t>& seqs) const {
    const int32_t* first = batch_.block_ids + batch_.block_start[seqs[0]];
    int64_t blocks = batch_.block_start[seqs[0] + 1] - batch_.block_start[seqs[0]];
    int64_t keys = Keys(seqs[0], batch_.q_start[seqs[0]]);
    for (int64_t seq : seqs) {
      const int32_t* table = batch_.block_ids + batch_.block_start[seq];
      const int64_t length = batch_.block_start[seq + 1] - batch_.block_start[seq];
      blocks = std::mismatch(first, first + std::min(blocks, length), table).first - first;
      keys = std::min(keys, Keys(seq, batch_.q_start[seq]));
    }
    return std::min(keys, blocks * block_size_);
  }

  const PagedBatch& batch_;
  const int64_t kv_heads_;
  const int64_t group_;
  const int64_t block_size_;
  const bool panels_;
  const int64_t threads_;
  std::vector<AttentionUnit> sets_;  // Row sets, all kv heads each.
  AttentionPlan plan_;
};

}  // namespace

AttentionPlan PlanAttention(const PagedBatch& batch, int64_t kv_heads, int64_t group,
                            int64_t block_size, bool panels, int64_t threads) {
  return Planner(batch, kv_heads, group, block_size, panels, threads).Plan();
}

}  // namespace arbor::kernels
