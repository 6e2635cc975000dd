#include "metrics/text_format.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace arbor::metrics {
namespace {

// HELP text escapes backslash and line feed; label values also the double quote.
void AppendEscaped(absl::string_view text, bool quote, std::string& out) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

}  // namespace

void AppendHeader(absl::string_view name, absl::string_view help, absl::string_view type,
                  std::string& out) {
  absl::StrAppend(&out, "# HELP ", name, " ");
  AppendEscaped(help, /*quote=*/false, out);
  absl::StrAppend(&out, "\n# TYPE ", name, " ", type, "\n");
}

void AppendSample(absl::string_view name, const LabelPairs& labels, double value,
                  std::string& out) {
  out.append(name.data(), name.size());
  if (!labels.empty()) {
    out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      absl::StrAppend(&out, i == 0 ? "" : ",", labels[i].first, "=\"");
      AppendEscaped(labels[i].second, /*quote=*/true, out);
      out += '"';
    }
    out += '}';
  }
  absl::StrAppend(&out, " ", FormatValue(value), "\n");
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

}  // namespace arbor::metrics
