// One side of attention_ab.sh's race: the CPU attention of one source tree behind two plain
// functions. The script compiles this file twice, once against each tree, the second time with
// the namespace renamed (-Darbor=arbor_base), so both versions link into one program.
#include "kernels/cpu/thread_pool.h"
#include "kernels/paged_attention.h"

namespace arbor::attention_ab {

// A pool of `threads` (the caller's thread included), or null for one thread.
void* NewPool(int threads) { return threads > 1 ? new kernels::ThreadPool(threads) : nullptr; }

void DeletePool(void* pool) { delete static_cast<kernels::ThreadPool*>(pool); }

// `params` is a kernels::PagedAttentionParams (the script checks that both trees declare it alike).
void Attend(const void* params, void* pool) {
  kernels::PagedAttentionRef(*static_cast<const kernels::PagedAttentionParams*>(params),
                             static_cast<kernels::ThreadPool*>(pool));
}

}  // namespace arbor::attention_ab
