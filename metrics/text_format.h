// The pieces of the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): comment lines, sample lines,
// escaping and number spelling. Families render themselves through these (family.h).
#ifndef ARBOR_METRICS_TEXT_FORMAT_H_
#define ARBOR_METRICS_TEXT_FORMAT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace arbor::metrics {

// The Content-Type a scrape answer carries.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// A sample's labels in order, (name, value) pairs; values are escaped when rendered.
using LabelPairs = std::vector<std::pair<absl::string_view, absl::string_view>>;

// "# HELP name help" (backslash and line feed escaped) and "# TYPE name type".
void AppendHeader(absl::string_view name, absl::string_view help, absl::string_view type,
                  std::string& out);
// "name{l1="v1",l2="v2"} value": no braces without labels; values with backslash, double
// quote and line feed escaped.
void AppendSample(absl::string_view name, const LabelPairs& labels, double value, std::string& out);
// Shortest text that reads back as the same double; NaN, +Inf, -Inf as Prometheus spells them.
std::string FormatValue(double value);

}  // namespace arbor::metrics

#endif  // ARBOR_METRICS_TEXT_FORMAT_H_
