#include "worker/backend/forward_rows.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace arbor::worker {

StepBatch MakeStepBatch(std::span<const ForwardRow> rows, int32_t block_size) {
  StepBatch b;
  for (const ForwardRow& row : rows) {
    const int32_t n = static_cast<int32_t>(row.tokens.size());
    b.decode &= n == 1;
    b.q_start.push_back(b.q_start.back() + n);
    b.kv_len.push_back(row.start_pos + n);
    b.max_kv_len = std::max(b.max_kv_len, b.kv_len.back());
    const int64_t blocks = (int64_t{b.kv_len.back()} + block_size - 1) / block_size;
    b.block_ids.insert(b.block_ids.end(), row.block_table.begin(),
                       row.block_table.begin() + blocks);
    b.block_start.push_back(static_cast<int32_t>(b.block_ids.size()));
    b.tokens.insert(b.tokens.end(), row.tokens.begin(), row.tokens.end());
    for (int32_t i = 0; i < n; ++i) b.positions.push_back(row.start_pos + i);
    if (row.logits != nullptr || row.reduction != nullptr) {
      b.logit_rows.push_back(b.q_start.back() - 1);
    }
  }
  return b;
}

absl::Status ValidateForwardRows(std::span<const ForwardRow> rows, int32_t vocab_size,
                                 int32_t block_size, int32_t kv_blocks) {
  for (size_t r = 0; r < rows.size(); ++r) {
    const ForwardRow& row = rows[r];
    if (row.tokens.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("forward row ", r, ": tokens is empty"));
    }
    for (size_t i = 0; i < row.tokens.size(); ++i) {
      if (row.tokens[i] < 0 || row.tokens[i] >= vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("forward row ", r, ": tokens[", i,
                                                       "] = ", row.tokens[i], " outside [0, ",
                                                       vocab_size, ")"));
      }
    }
    if (row.reduction != nullptr) {
      if (absl::Status bad = ValidateReductionRequest(row.reduction->request, vocab_size);
          !bad.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("forward row ", r, ": ", bad.message()));
      }
    }
    const int64_t len = int64_t{row.start_pos} + static_cast<int64_t>(row.tokens.size());
    const int64_t blocks_needed = (len + block_size - 1) / block_size;
    if (row.start_pos < 0 || static_cast<int64_t>(row.block_table.size()) < blocks_needed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "forward row ", r, ": start_pos ", row.start_pos, " with ", row.tokens.size(),
          " tokens needs ", blocks_needed, " blocks, block_table has ", row.block_table.size()));
    }
    for (int64_t i = 0; i < blocks_needed; ++i) {
      if (row.block_table[i] < 0 || row.block_table[i] >= kv_blocks) {
        return absl::InvalidArgumentError(absl::StrCat("forward row ", r, ": block_table[", i,
                                                       "] = ", row.block_table[i], " outside [0, ",
                                                       kv_blocks, ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateBlockCopies(std::span<const BlockCopy> copies, int32_t block_size,
                                 int32_t kv_blocks) {
  for (const BlockCopy& c : copies) {
    if (c.src < 0 || c.src >= kv_blocks || c.dst < 0 || c.dst >= kv_blocks || c.num_tokens < 0 ||
        c.num_tokens > block_size) {
      return absl::InvalidArgumentError(absl::StrCat("KV block copy ", c.src, " -> ", c.dst, " (",
                                                     c.num_tokens, " tokens) out of range"));
    }
  }
  return absl::OkStatus();
}

kernels::RopeScalingParams RopeScalingParamsOf(const model::RopeScaling& s) {
  kernels::RopeScalingParams p;
  switch (s.type) {
    case model::RopeScaling::Type::kNone:
      p.type = kernels::RopeScalingParams::Type::kNone;
      break;
    case model::RopeScaling::Type::kLinear:
      p.type = kernels::RopeScalingParams::Type::kLinear;
      break;
    case model::RopeScaling::Type::kLlama3:
      p.type = kernels::RopeScalingParams::Type::kLlama3;
      break;
  }
  p.factor = s.factor;
  p.low_freq_factor = s.low_freq_factor;
  p.high_freq_factor = s.high_freq_factor;
  p.freq_factors.assign(s.freq_factors.begin(), s.freq_factors.end());
  p.original_max_position_embeddings = s.original_max_position_embeddings;
  return p;
}

}  // namespace arbor::worker
