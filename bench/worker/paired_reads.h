// A streaming benchmark's rate against the memory's, moment by moment. On a VM the memory's rate
// moves by a fifth within seconds (neighbours share it), so a figure that divides a benchmark's
// mean rate over seconds by the best of a few reads divides an average by a lucky moment, and
// reads low by about as much as the memory wanders. Here the timed loop is cut into slices of
// about a tenth of a second with one read of the best read loop (ReadRoofline) between each two,
// and each slice's rate is divided by the mean of the two reads around it; the figure is the
// median of those ratios, as an A/B race takes the median of its rounds' ratios.
#ifndef ARBOR_BENCH_WORKER_PAIRED_READS_H_
#define ARBOR_BENCH_WORKER_PAIRED_READS_H_

#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "bench/worker/read_bandwidth.h"

namespace arbor::worker {

class PairedReads {
 public:
  // Reads once, before the first slice.
  explicit PairedReads(ReadRoofline& roofline);

  // Call after each iteration of the timed loop, which streamed `bytes`: once the slice has run
  // long enough, pauses `state`'s timing, reads and starts the next slice.
  void Iteration(benchmark::State& state, double bytes);

  // After the loop: closes the last slice with one more read. Returns the median over slices of
  // slice rate ÷ the mean of the reads around it; 0 where no read could be made.
  double Finish();

 private:
  using Clock = std::chrono::steady_clock;
  void Close();

  ReadRoofline& roofline_;
  std::vector<double> reads_;   // Bytes/s, one before each slice and one after the last.
  std::vector<double> slices_;  // Bytes/s of each slice.
  Clock::time_point slice_start_;
  double slice_bytes_ = 0;
};

}  // namespace arbor::worker

#endif  // ARBOR_BENCH_WORKER_PAIRED_READS_H_
