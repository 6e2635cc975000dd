// The process_* metrics against independent readings of the same process: resident memory from
// /proc/self/statm, CPU time from getrusage, descriptors opened here, the rlimit, and a start
// time before now.
#include "metrics/process_metrics.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace arbor::metrics {
namespace {

// The value of the unlabelled series `name` in the registry's exposition.
double Value(const Registry& registry, const std::string& name) {
  std::istringstream text(registry.RenderText());
  for (std::string line; std::getline(text, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  ADD_FAILURE() << name << " is not in the exposition";
  return -1;
}

double RusageCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

TEST(ProcessMetricsTest, MatchIndependentReadingsOfThisProcess) {
  Registry registry;
  ProcessMetrics process(registry);
  // Burn 0.2 s of CPU (however busy the machine) so the counter has something to show.
  volatile double sink = 0;
  const double until = RusageCpuSeconds() + 0.2;
  while (RusageCpuSeconds() < until) sink = sink + 1;
  process.Refresh();
  const double cpu = Value(registry, "process_cpu_seconds_total");
  EXPECT_NEAR(cpu, RusageCpuSeconds(), 0.05) << "clock ticks are 10 ms";
  EXPECT_GT(cpu, 0.18);

  long pages = 0, resident = 0;
  std::ifstream("/proc/self/statm") >> pages >> resident;
  const double rss = static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
  EXPECT_NEAR(Value(registry, "process_resident_memory_bytes"), rss, 0.1 * rss);
  EXPECT_GE(Value(registry, "process_virtual_memory_bytes"),
            Value(registry, "process_resident_memory_bytes"));

  const double fds = Value(registry, "process_open_fds");
  EXPECT_GE(fds, 3);
  const int extra = open("/proc/self/stat", O_RDONLY);
  ASSERT_GE(extra, 0);
  process.Refresh();
  EXPECT_EQ(Value(registry, "process_open_fds"), fds + 1);
  close(extra);
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(Value(registry, "process_max_fds"), static_cast<double>(limit.rlim_cur));

  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  const double start = Value(registry, "process_start_time_seconds");
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 3600) << "this test process started within the hour";
  // The counter never goes back, and a second refresh adds only what was spent since.
  process.Refresh();
  EXPECT_GE(Value(registry, "process_cpu_seconds_total"), cpu);
}

}  // namespace
}  // namespace arbor::metrics
