#include "tools/kv_usage.h"

#include <cstdlib>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace arbor::tools {

std::string GroupedCount(int64_t n) {
  const std::string digits = std::to_string(std::llabs(n));
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return n < 0 ? "-" + grouped : grouped;
}

std::string BinaryBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  // Three significant digits, as `ls -h` and most dashboards show sizes.
  const int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
  return absl::StrFormat("%.*f %s", decimals, value, kUnits[unit]);
}

std::string KvUsage(const arbor::v1::WorkerStatus& worker) {
  const int64_t block_size = worker.info().block_size();
  const int64_t used = worker.load().cache().used_blocks() * block_size;
  const int64_t total = worker.load().cache().total_blocks() * block_size;
  std::string usage = absl::StrCat(GroupedCount(used), "/", GroupedCount(total), " tokens");
  const int64_t per_token = worker.info().kv_bytes_per_token();
  if (per_token > 0) {
    absl::StrAppend(&usage, " (", BinaryBytes(used * per_token), "/",
                    BinaryBytes(total * per_token), ")");
  }
  return usage;
}

}  // namespace arbor::tools
