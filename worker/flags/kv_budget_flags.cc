#include "worker/flags/kv_budget_flags.h"

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/flags.h"

ABSL_FLAG(int64_t, kv_tokens, 0,
          "KV cache capacity of a worker in tokens, shared by all its sequences (rounded up to "
          "whole blocks); 0 = as many as --kv_memory holds of the model's KV.");
ABSL_FLAG(std::string, kv_memory, "",
          "Memory budget of a worker's KV cache: a size (4GiB, 512MB, 2G) or a percentage of the "
          "host's available memory (40%); empty = 50% of available memory, at most 65536 tokens "
          "(on CUDA: 65536 tokens), and under `arbor up` that half shared among its workers. The "
          "pool is reserved at start and its pages are touched only as blocks are used; "
          "--kv_tokens overrides it.");

namespace arbor::worker {

absl::StatusOr<KvBudget> KvBudgetFromFlags() {
  KvBudget budget;
  budget.tokens = absl::GetFlag(FLAGS_kv_tokens);
  if (budget.tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--kv_tokens: ", budget.tokens,
                                                   " is negative; 0 sizes the pool from "
                                                   "--kv_memory"));
  }
  budget.memory = absl::GetFlag(FLAGS_kv_memory);
  return budget;
}

std::vector<std::string> KvBudgetArgs(const KvBudget& budget) {
  std::vector<std::string> args;
  if (budget.tokens != 0) args.push_back(base::FlagArg(FLAGS_kv_tokens, budget.tokens));
  if (!budget.memory.empty()) args.push_back(base::FlagArg(FLAGS_kv_memory, budget.memory));
  return args;
}

}  // namespace arbor::worker
