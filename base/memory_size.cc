#include "base/memory_size.h"

#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/files.h"

namespace arbor::base {
namespace {

absl::Status Unreadable(absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text,
      "' is not a memory size: give bytes with an optional unit (512MiB, 2GB, 1.5G) or a "
      "percentage of the available memory (40%)"));
}

// The multiplier of a unit suffix (already lower-cased, trailing "b" removed), or 0.
double UnitBytes(absl::string_view unit) {
  static constexpr struct {
    const char* name;
    double bytes;
  } kUnits[] = {{"", 1.0},         {"k", 1e3},           {"m", 1e6},
                {"g", 1e9},        {"t", 1e12},          {"ki", 1024.0},
                {"mi", 1048576.0}, {"gi", 1073741824.0}, {"ti", 1099511627776.0}};
  for (const auto& u : kUnits) {
    if (unit == u.name) return u.bytes;
  }
  return 0;
}

}  // namespace

absl::StatusOr<int64_t> ParseMemorySize(absl::string_view text, int64_t available) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  absl::string_view rest = lower;
  double bytes = 0;
  if (absl::ConsumeSuffix(&rest, "%")) {
    double percent = 0;
    if (!absl::SimpleAtod(rest, &percent) || !(percent > 0 && percent <= 100)) {
      return Unreadable(text);
    }
    bytes = std::floor(static_cast<double>(available) * percent / 100);
  } else {
    absl::ConsumeSuffix(&rest, "b");
    const size_t digits = rest.find_first_not_of("0123456789.");
    const absl::string_view number = rest.substr(0, digits);
    const double unit = UnitBytes(digits == absl::string_view::npos ? "" : rest.substr(digits));
    double value = 0;
    if (number.empty() || unit == 0 || !absl::SimpleAtod(number, &value)) return Unreadable(text);
    bytes = std::floor(value * unit);
  }
  if (!(bytes >= 1 && bytes <= 4.6e18)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is ", bytes < 1 ? "no" : "too much", " memory"));
  }
  return static_cast<int64_t>(bytes);
}

std::optional<int64_t> AvailableMemoryBytes() {
  const absl::StatusOr<std::string> meminfo = ReadFile("/proc/meminfo");
  if (!meminfo.ok()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemAvailable:")) continue;
    line = absl::StripAsciiWhitespace(line);
    int64_t kib = 0;
    if (absl::ConsumeSuffix(&line, " kB") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib)) {
      return kib * 1024;
    }
  }
  return std::nullopt;
}

}  // namespace arbor::base
