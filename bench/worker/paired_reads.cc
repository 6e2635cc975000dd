#include "bench/worker/paired_reads.h"

#include <algorithm>

namespace arbor::worker {
namespace {

// A slice's length: long against a step of the slowest model here (~50 ms) and a read (~30 ms),
// short against the memory's swings.
constexpr double kSliceSeconds = 0.1;

}  // namespace

PairedReads::PairedReads(ReadRoofline& roofline) : roofline_(roofline) {
  reads_.push_back(roofline_.MeasureOnce());
  slice_start_ = Clock::now();
}

void PairedReads::Iteration(benchmark::State& state, double bytes) {
  slice_bytes_ += bytes;
  if (std::chrono::duration<double>(Clock::now() - slice_start_).count() < kSliceSeconds) return;
  state.PauseTiming();
  Close();
  state.ResumeTiming();
}

void PairedReads::Close() {
  const double seconds = std::chrono::duration<double>(Clock::now() - slice_start_).count();
  slices_.push_back(slice_bytes_ / seconds);
  reads_.push_back(roofline_.MeasureOnce());
  slice_bytes_ = 0;
  slice_start_ = Clock::now();
}

double PairedReads::Finish() {
  if (slice_bytes_ > 0) Close();
  std::vector<double> ratios;
  for (size_t i = 0; i < slices_.size(); ++i) {
    const double read = (reads_[i] + reads_[i + 1]) / 2;
    if (read > 0) ratios.push_back(slices_[i] / read);
  }
  if (ratios.empty()) return 0;
  std::sort(ratios.begin(), ratios.end());
  const size_t mid = ratios.size() / 2;
  return ratios.size() % 2 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
}

}  // namespace arbor::worker
