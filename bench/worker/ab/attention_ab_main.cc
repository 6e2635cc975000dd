// attention_ab.sh's race: the working tree's CPU attention against a base revision's (race.h).
// Prints per case the medians and the median and quartiles of the per-round time ratios, after
// checking that both give the same bits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "bench/worker/ab/race.h"
#include "bench/worker/shuffled_batch.h"
#include "kernels/paged_attention.h"

namespace arbor::attention_ab {
void* NewPool(int threads);
void DeletePool(void* pool);
void Attend(const void* params, void* pool);
}  // namespace arbor::attention_ab
namespace arbor_base::attention_ab {
void* NewPool(int threads);
void DeletePool(void* pool);
void Attend(const void* params, void* pool);
}  // namespace arbor_base::attention_ab

namespace {

using arbor::kernels::PagedAttentionParams;

// `seqs` sequences of `context` keys, the last `queries` of each the step's query tokens (a
// prompt: queries = context; decode: 1), fp32 KV in blocks of 16 in a shuffled pool.
struct Case {
  int64_t head_dim, group, kv_heads, seqs, context, queries;
  std::unique_ptr<arbor::bench::ShuffledBatch> batch;
  std::vector<float> k, v, q, out;
  PagedAttentionParams p;

  void Build() {
    const int64_t block = 16, heads = group * kv_heads, width = kv_heads * head_dim;
    std::mt19937 rng(7);
    batch = std::make_unique<arbor::bench::ShuffledBatch>(seqs, context, queries, block, rng);
    const std::vector<int32_t>& block_ids = batch->block_ids;
    std::normal_distribution<float> normal;
    auto fill = [&](std::vector<float>& x, int64_t n) {
      x.resize(n);
      for (float& value : x) value = normal(rng);
    };
    fill(k, static_cast<int64_t>(block_ids.size()) * block * width);
    fill(v, static_cast<int64_t>(block_ids.size()) * block * width);
    fill(q, seqs * queries * heads * head_dim);
    out.resize(q.size());
    p.batch = batch->View();
    p.cache.k = k.data();
    p.cache.v = v.data();
    p.cache.num_blocks = static_cast<int64_t>(block_ids.size());
    p.cache.block_size = block;
    p.cache.num_kv_heads = kv_heads;
    p.cache.head_dim = head_dim;
    p.q = q.data();
    p.out = out.data();
    p.q_stride = p.out_stride = heads * head_dim;
    p.num_heads = heads;
    p.scale = 0.125f;
  }
};

// Both trees' attention over one case: the same bits first, then the race.
int Race(Case& c, int threads, double budget) {
  c.Build();
  void* base_pool = arbor_base::attention_ab::NewPool(threads);
  void* work_pool = arbor::attention_ab::NewPool(threads);
  arbor_base::attention_ab::Attend(&c.p, base_pool);
  const std::vector<float> base_out = c.out;
  arbor::attention_ab::Attend(&c.p, work_pool);
  if (std::memcmp(base_out.data(), c.out.data(), base_out.size() * sizeof(float)) != 0) {
    std::printf("the two trees' outputs differ\n");
    return 1;
  }
  const arbor::bench::RaceResult result =
      arbor::bench::Race([&] { arbor_base::attention_ab::Attend(&c.p, base_pool); },
                         [&] { arbor::attention_ab::Attend(&c.p, work_pool); }, budget);
  std::printf("%4lld %5lld %3lld %5lld %6lld %7d ", static_cast<long long>(c.group),
              static_cast<long long>(c.kv_heads), static_cast<long long>(c.seqs),
              static_cast<long long>(c.context), static_cast<long long>(c.queries), threads);
  result.Print();
  arbor_base::attention_ab::DeletePool(base_pool);
  arbor::attention_ab::DeletePool(work_pool);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Args: seconds per case (default 4); then cases as group,kv_heads,seqs,context,queries,threads.
  const double budget = argc > 1 ? std::atof(argv[1]) : 4.0;
  std::vector<Case> cases;
  std::vector<int> threads;
  for (int a = 2; a < argc; ++a) {
    long long g, h, s, n, q;
    int t;
    if (std::sscanf(argv[a], "%lld,%lld,%lld,%lld,%lld,%d", &g, &h, &s, &n, &q, &t) != 6) {
      std::fprintf(stderr, "a case is group,kv_heads,seqs,context,queries,threads: %s\n", argv[a]);
      return 2;
    }
    cases.push_back({64, g, h, s, n, q});
    threads.push_back(t);
  }
  if (cases.empty()) {  // SmolLM2 (3 of 3) and the 1B shape (4 of 8): prompts, then decode.
    for (int64_t n : {256, 2048}) {
      cases.push_back({64, 3, 3, 1, n, n});
      cases.push_back({64, 4, 8, 1, n, n});
    }
    for (int64_t n : {512, 4096}) cases.push_back({64, 4, 8, 8, n, 1});
    threads.assign(cases.size(), 1);
  }
  std::printf(
      "group kv_heads seqs context queries threads rounds base_us work_us base/work "
      "quartiles\n");
  for (size_t i = 0; i < cases.size(); ++i) {
    if (Race(cases[i], threads[i], budget) != 0) return 1;
  }
  return 0;
}
