#include "metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace arbor::metrics {
namespace {

// Fields of /proc/self/stat after the command name (which may hold spaces and parentheses,
// hence the last ')'), numbered as proc(5) numbers them from field 3 (state) on.
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  const size_t close = line.rfind(')');
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream rest(line.substr(close + 1));
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

// proc(5) field number `n` (1-based, n >= 3) as a number, or -1.
double StatField(const std::vector<std::string>& fields, size_t n) {
  if (n < 3 || n - 3 >= fields.size()) return -1;
  return std::stod(fields[n - 3]);
}

// Seconds since the epoch at which the system booted, from CLOCK_REALTIME − CLOCK_BOOTTIME.
double BootTimeSeconds() {
  timespec real{}, boot{};
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_BOOTTIME, &boot);
  return static_cast<double>(real.tv_sec - boot.tv_sec) +
         static_cast<double>(real.tv_nsec - boot.tv_nsec) * 1e-9;
}

int OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count - 1;  // The directory stream's own descriptor.
}

}  // namespace

ProcessMetrics::ProcessMetrics(Registry& registry)
    : cpu_seconds_(registry
                       .AddCounter("process_cpu_seconds_total",
                                   "Total user and system CPU time spent in seconds.")
                       .Get()),
      resident_bytes_(
          registry.AddGauge("process_resident_memory_bytes", "Resident memory size in bytes.")
              .Get()),
      virtual_bytes_(
          registry.AddGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.")
              .Get()),
      open_fds_(registry.AddGauge("process_open_fds", "Number of open file descriptors.").Get()),
      max_fds_(
          registry.AddGauge("process_max_fds", "Maximum number of open file descriptors.").Get()),
      start_time_seconds_(registry
                              .AddGauge("process_start_time_seconds",
                                        "Start time of the process since unix epoch in seconds.")
                              .Get()) {}

void ProcessMetrics::Refresh() {
  const std::vector<std::string> stat = StatFields();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  // proc(5): 14 utime, 15 stime, 22 starttime (ticks after boot), 23 vsize, 24 rss (pages).
  const double utime = StatField(stat, 14), stime = StatField(stat, 15);
  if (utime >= 0 && stime >= 0) {
    static absl::Mutex mu(absl::kConstInit);  // Read and advance as one step, process-wide.
    absl::MutexLock lock(&mu);
    const double cpu = (utime + stime) / ticks;
    if (cpu > cpu_seconds_.Value()) cpu_seconds_.Inc(cpu - cpu_seconds_.Value());
  }
  if (const double start = StatField(stat, 22); start >= 0) {
    start_time_seconds_.Set(BootTimeSeconds() + start / ticks);
  }
  if (const double vsize = StatField(stat, 23); vsize >= 0) virtual_bytes_.Set(vsize);
  if (const double rss = StatField(stat, 24); rss >= 0) resident_bytes_.Set(rss * page);
  if (const int fds = OpenFds(); fds >= 0) open_fds_.Set(fds);
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) max_fds_.Set(static_cast<double>(limit.rlim_cur));
}

}  // namespace arbor::metrics
