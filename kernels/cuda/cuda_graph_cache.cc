#include "kernels/cuda/cuda_graph_cache.h"

#include <utility>

#include "kernels/cuda/cuda_status.h"

namespace arbor::kernels {

CudaGraphCache::~CudaGraphCache() {
  for (auto& [key, entry] : entries_) {
    if (entry.exec != nullptr) cudaGraphExecDestroy(entry.exec);
  }
}

absl::StatusOr<bool> CudaGraphCache::Capture(Entry& entry, cudaStream_t stream,
                                             const std::function<absl::Status()>& enqueue) {
  // Thread-local mode: other threads' CUDA calls (another backend, a host copy) stay legal while
  // this stream records.
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const absl::Status launched = enqueue();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!launched.ok()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    return launched;
  }
  if (ended != cudaSuccess || graph == nullptr) {
    cudaGetLastError();
    return false;
  }
  const cudaError_t instantiated = cudaGraphInstantiate(&entry.exec, graph, 0);
  cudaGraphDestroy(graph);
  if (instantiated != cudaSuccess) {
    cudaGetLastError();
    entry.exec = nullptr;
    return false;
  }
  ++captures_;
  return true;
}

absl::Status CudaGraphCache::Run(const Key& key, cudaStream_t stream,
                                 const std::function<absl::Status()>& enqueue) {
  Entry& entry = entries_[key];
  entry.last_use = ++clock_;
  ++entry.seen;
  if (entry.exec == nullptr && !entry.uncapturable && entry.seen >= capture_after_) {
    absl::StatusOr<bool> captured = Capture(entry, stream, enqueue);
    if (!captured.ok()) return captured.status();
    entry.uncapturable = !*captured;
  }
  absl::Status status;
  if (entry.exec != nullptr) {
    status = CudaStatus(cudaGraphLaunch(entry.exec, stream), "graph launch");
    ++replays_;
  } else {
    status = enqueue();
  }
  EvictBeyondCapacity(stream);
  return status;
}

void CudaGraphCache::EvictBeyondCapacity(cudaStream_t stream) {
  if (entries_.size() <= capacity_) return;
  // Rare (a new key beyond capacity): wait rather than destroy a graph still running.
  cudaStreamSynchronize(stream);
  while (entries_.size() > capacity_) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    }
    if (oldest->second.exec != nullptr) cudaGraphExecDestroy(oldest->second.exec);
    entries_.erase(oldest);
  }
}

}  // namespace arbor::kernels
