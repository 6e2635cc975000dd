// A small scatter plot rendered to PNG without a plotting library: axes with "nice" ticks,
// labelled points with vertical error bars joined per series, a legend, and text in a built-in
// 5×7 bitmap font (letters are drawn as capitals). Enough for `arbor eval`'s accuracy-against-
// compute figure, written by the binary itself so the report needs nothing else installed.
#ifndef ARBOR_TOOLS_EVAL_REPORT_PNG_PLOT_H_
#define ARBOR_TOOLS_EVAL_REPORT_PNG_PLOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace arbor::eval {

struct PlotPoint {
  double x = 0, y = 0, y_lo = 0, y_hi = 0;
};

struct PlotSeries {
  std::string name;
  std::vector<PlotPoint> points;
};

struct Plot {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  bool log_x = false;
  int width = 900, height = 600;
};

// The PNG bytes (8-bit RGB). Non-finite points (and non-positive x on a log axis) are skipped.
absl::StatusOr<std::string> RenderPlotPng(const Plot& plot);
// Renders and writes atomically (a temporary renamed over `path`); errors name the path.
absl::Status WritePlotPng(const Plot& plot, const std::string& path);

}  // namespace arbor::eval

#endif  // ARBOR_TOOLS_EVAL_REPORT_PNG_PLOT_H_
