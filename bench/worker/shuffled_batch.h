// The paged batch of the attention benchmarks (attention_bench.cc, ab/attention_ab_main.cc):
// `seqs` sequences of `context` keys each, the last `queries` of which are the step's query
// tokens, in blocks of `block` tokens dealt from a shuffled pool (so a sequence's blocks are
// scattered, as in a long-running server's KV pool).
#ifndef ARBOR_BENCH_WORKER_SHUFFLED_BATCH_H_
#define ARBOR_BENCH_WORKER_SHUFFLED_BATCH_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/paged_kv.h"

namespace arbor::bench {

struct ShuffledBatch {
  ShuffledBatch(int64_t seqs, int64_t context, int64_t queries, int64_t block, std::mt19937& rng) {
    const int64_t per_seq = (context + block - 1) / block;
    block_ids.resize(seqs * per_seq);
    for (size_t i = 0; i < block_ids.size(); ++i) block_ids[i] = static_cast<int32_t>(i);
    std::shuffle(block_ids.begin(), block_ids.end(), rng);
    kv_len.assign(seqs, static_cast<int32_t>(context));
    for (int64_t s = 0; s <= seqs; ++s) {
      q_start.push_back(static_cast<int32_t>(s * queries));
      block_start.push_back(static_cast<int32_t>(s * per_seq));
    }
  }
  // Points into this object: valid while it lives and is not moved.
  kernels::PagedBatch View() const {
    return {static_cast<int64_t>(kv_len.size()), q_start.data(), kv_len.data(), block_start.data(),
            block_ids.data()};
  }

  std::vector<int32_t> q_start, kv_len, block_start, block_ids;
};

}  // namespace arbor::bench

#endif  // ARBOR_BENCH_WORKER_SHUFFLED_BATCH_H_
