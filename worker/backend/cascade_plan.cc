#include "worker/backend/cascade_plan.h"

#include <algorithm>
#include <map>

namespace arbor::worker {
namespace {

// Row r's block ids.
struct Table {
  const int32_t* ids;
  int32_t size;
};
Table TableOf(const StepBatch& b, int32_t r) {
  return {b.block_ids.data() + b.block_start[r], b.block_start[r + 1] - b.block_start[r]};
}

// Whole blocks all `rows` share from the start, each row keeping its last key for itself.
int32_t SharedBlocks(const StepBatch& b, const std::vector<int32_t>& rows, int32_t block_size) {
  int32_t shared = TableOf(b, rows[0]).size;
  for (int32_t r : rows) shared = std::min(shared, (b.kv_len[r] - 1) / block_size);
  const Table first = TableOf(b, rows[0]);
  for (int32_t r : rows) {
    const Table t = TableOf(b, r);
    int32_t same = 0;
    while (same < shared && t.ids[same] == first.ids[same]) ++same;
    shared = same;
  }
  return shared;
}

void AddGroup(CascadePlan& plan, const std::vector<int32_t>& rows, int32_t prefix) {
  for (int32_t r : rows) {
    plan.tokens.push_back(r);  // Decode: row r's one token is token r.
    plan.key_begin[r] = prefix;
  }
  plan.group_start.push_back(static_cast<int32_t>(plan.tokens.size()));
  plan.seq.push_back(rows[0]);
  plan.prefix_len.push_back(prefix);
  plan.max_members = std::max(plan.max_members, static_cast<int32_t>(rows.size()));
  plan.max_prefix_len = std::max(plan.max_prefix_len, prefix);
}

}  // namespace

CascadePlan PlanCascade(const StepBatch& b, int32_t block_size, int32_t max_members,
                        int32_t min_members) {
  const int32_t rows = static_cast<int32_t>(b.kv_len.size());
  min_members = std::max(min_members, 2);
  if (!b.decode || rows < min_members || max_members < min_members) return {};
  std::map<int32_t, std::vector<int32_t>> by_first_block;
  for (int32_t r = 0; r < rows; ++r) by_first_block[TableOf(b, r).ids[0]].push_back(r);
  CascadePlan plan;
  plan.key_begin.assign(rows, 0);
  bool shares = false;
  for (const auto& [block, members] : by_first_block) {
    const int32_t prefix =
        members.size() < 2 ? 0 : SharedBlocks(b, members, block_size) * block_size;
    if (prefix == 0) {
      for (int32_t r : members) AddGroup(plan, {r}, 0);
      continue;
    }
    for (size_t i = 0; i < members.size(); i += max_members) {
      const size_t n = std::min(members.size() - i, static_cast<size_t>(max_members));
      if (n < static_cast<size_t>(min_members)) {
        for (size_t j = i; j < i + n; ++j) AddGroup(plan, {members[j]}, 0);
        continue;
      }
      shares = true;
      AddGroup(plan, std::vector<int32_t>(members.begin() + i, members.begin() + i + n), prefix);
    }
  }
  return shares ? plan : CascadePlan{};
}

}  // namespace arbor::worker
