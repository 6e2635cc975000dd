// Replays a repeated sequence of launches as one CUDA graph. A decode step of a small model is
// ~200 short kernels; launched one by one, the gaps between them cost as much as the kernels.
// Captured once into a graph and replayed, the device runs them back to back.
//
// The caller names each distinct sequence by a key that must capture everything the launches
// bake in: shapes, grid sizes and every device address (buffers that may move go in the key, so
// a moved buffer is a new key, never a stale graph). What changes from step to step must live in
// device memory the launches read (the batch description, token ids), uploaded before Run.
//
// A key runs eagerly until it has been seen `capture_after` times (a shape seen once is not worth
// an instantiation), then is captured and replayed from then on. At most `capacity` keys are
// remembered; the least recently used is forgotten (its graph destroyed). A sequence that cannot
// be captured runs eagerly for good. Not thread-safe: one cache per stream's owner.
#ifndef ARBOR_KERNELS_CUDA_CUDA_GRAPH_CACHE_H_
#define ARBOR_KERNELS_CUDA_CUDA_GRAPH_CACHE_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace arbor::kernels {

class CudaGraphCache {
 public:
  using Key = std::vector<int64_t>;

  explicit CudaGraphCache(size_t capacity = 32, int64_t capture_after = 2)
      : capacity_(capacity), capture_after_(capture_after) {}
  ~CudaGraphCache();
  CudaGraphCache(const CudaGraphCache&) = delete;
  CudaGraphCache& operator=(const CudaGraphCache&) = delete;

  // Runs `enqueue` (which only launches work on `stream`: no synchronisation, no allocation) for
  // `key`: eagerly, or by replaying (after capturing) the key's graph. Asynchronous like a launch.
  absl::Status Run(const Key& key, cudaStream_t stream,
                   const std::function<absl::Status()>& enqueue);

  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }

 private:
  struct Entry {
    cudaGraphExec_t exec = nullptr;
    int64_t seen = 0;
    uint64_t last_use = 0;
    bool uncapturable = false;
  };
  // Captures `enqueue` into `entry.exec`; false (and the stream's capture ended) when the
  // sequence cannot be captured. A launch error inside the sequence is returned as such.
  absl::StatusOr<bool> Capture(Entry& entry, cudaStream_t stream,
                               const std::function<absl::Status()>& enqueue);
  // Forgets least recently used keys beyond capacity, after `stream` has finished their work.
  void EvictBeyondCapacity(cudaStream_t stream);

  size_t capacity_;
  int64_t capture_after_;
  std::map<Key, Entry> entries_;
  uint64_t clock_ = 0;
  int64_t captures_ = 0;
  int64_t replays_ = 0;
};

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_CUDA_CUDA_GRAPH_CACHE_H_
