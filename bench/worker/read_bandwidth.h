// The roofline of a weight-streaming decode step: the best streaming read the benchmark's own
// threads (its kernels::ThreadPool) do over a buffer many times the last-level cache, mapped as
// the CPU backend maps its repacked weights (huge pages, base::HugePageArena). The best of
// several read loops (AVX-512 or AVX2 loads by the CPU's features, with and without software
// prefetch) and splits of the buffer over the threads, each run a few times in interleaved rounds,
// so that the figure is what this machine's memory gives now and `bw_frac` means what it says.
#ifndef ARBOR_BENCH_WORKER_READ_BANDWIDTH_H_
#define ARBOR_BENCH_WORKER_READ_BANDWIDTH_H_

#include <string>

#include "kernels/cpu/thread_pool.h"

namespace arbor::worker {

struct ReadBandwidth {
  double bytes_per_second = 0;  // The best read's.
  std::string best;             // Which read loop and split gave it.
  std::string all;              // Each read's best, GB/s, for the record.
};

// Three rounds of every read loop and split over 1 GiB or more (a second or two at 25 GB/s).
ReadBandwidth MeasureBestRead(kernels::ThreadPool& pool);

// The CPU's model name, family and model (/proc/cpuinfo) and its vector extensions, e.g.
// "AMD EPYC (family 25, model 17; AVX-512)".
std::string CpuName();

}  // namespace arbor::worker

#endif  // ARBOR_BENCH_WORKER_READ_BANDWIDTH_H_
