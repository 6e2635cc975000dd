// A small scatter plot written as SVG, which any browser (and the viewer) shows: axes with
// "nice" ticks and numeric labels, points with vertical error bars joined per series in x order,
// and a legend. Enough for `arbor eval`'s accuracy-against-compute figure, written by the binary
// itself so the report needs nothing else installed; the numbers stay in the JSON report.
#ifndef ARBOR_TOOLS_EVAL_REPORT_SVG_PLOT_H_
#define ARBOR_TOOLS_EVAL_REPORT_SVG_PLOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace arbor::tools::eval {

// One marker at (x, y) with an error bar from y_lo to y_hi (not drawn when either is not
// finite).
struct PlotPoint {
  double x = 0, y = 0, y_lo = 0, y_hi = 0;
};

struct PlotSeries {
  std::string name;
  std::vector<PlotPoint> points;
};

struct Plot {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;  // Series i takes colour i of a fixed colour-blind-safe palette.
  bool log_x = false;
  int width = 900, height = 600;  // SVG pixels; 320–4096 wide, 240–4096 high.
};

// The SVG document (monospace text, so labels lay out without font metrics). Points with a
// non-finite x or y (and x ≤ 0 on a log axis) are skipped, and so are series left without
// points, in the legend too; with no points at all the axes still render, over [0, 1].
// INVALID_ARGUMENT for a size outside the bounds above.
absl::StatusOr<std::string> RenderPlotSvg(const Plot& plot);

// Renders and writes atomically: to `path` + ".tmp", then renamed over `path`, so a reader never
// sees half a file. Errors name the path.
absl::Status WritePlotSvg(const Plot& plot, const std::string& path);

// The ticks of a linear axis covering [lo, hi]: 4 to 8 multiples of one step of 1, 2 or 5 × 10^k,
// the first ≤ lo and the last ≥ hi, so they double as the axis limits. A zero-width or
// non-finite range is widened first. Exposed for tests.
std::vector<double> NiceTicks(double lo, double hi);

// The same for a log axis over [lo, hi], 0 < lo ≤ hi: linear nice ticks when the range spans
// less than a decade (and they stay positive), else 1, 2, 5 × 10^k over one or two decades, else
// powers of ten, every s-th decade when there are too many. 4 to 8 ticks. Exposed for tests.
std::vector<double> LogTicks(double lo, double hi);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_REPORT_SVG_PLOT_H_
