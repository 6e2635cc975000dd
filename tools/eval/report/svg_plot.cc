#include "tools/eval/report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/files.h"

namespace arbor::tools::eval {
namespace {

struct Rgb {
  uint8_t r, g, b;
};

constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225};
// Okabe-Ito's colour-blind-safe eight (yellow and black, the weakest against white and the axes,
// last), then four of Tol's muted set for longer comparisons.
constexpr Rgb kPalette[] = {{0, 114, 178}, {213, 94, 0},   {0, 158, 115},  {204, 121, 167},
                            {230, 159, 0}, {86, 180, 233}, {240, 228, 66}, {0, 0, 0},
                            {136, 34, 85}, {68, 170, 153}, {153, 153, 51}, {119, 119, 119}};
constexpr int kMinWidth = 320, kMinHeight = 240, kMaxSide = 4096;
constexpr int kMarkerRadius = 4, kCapHalfWidth = 4, kTickLength = 5;
// Text is monospace at kTextHeight pixels, whose characters are 0.6 em wide: widths are known
// without a font, so labels can be laid out.
constexpr int kTextHeight = 12;
constexpr double kCharWidth = 0.6 * kTextHeight;

std::string Colour(Rgb c) { return absl::StrFormat("#%02x%02x%02x", c.r, c.g, c.b); }

// `text` with the characters XML gives meaning to escaped.
std::string Escaped(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// The few primitives a plot needs, as SVG elements in drawing order (later ones on top).
class Canvas {
 public:
  Canvas(int width, int height) : width_(width), height_(height) {}

  void FillRect(int x0, int y0, int x1, int y1, Rgb c) {
    absl::StrAppendFormat(
        &body_, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
        std::min(x0, x1), std::min(y0, y1), std::abs(x1 - x0), std::abs(y1 - y0), Colour(c));
  }
  void Box(int x0, int y0, int x1, int y1, Rgb c) {
    absl::StrAppendFormat(&body_,
                          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                          "stroke=\"%s\"/>\n",
                          std::min(x0, x1), std::min(y0, y1), std::abs(x1 - x0), std::abs(y1 - y0),
                          Colour(c));
  }
  void Line(int x0, int y0, int x1, int y1, Rgb c) {
    absl::StrAppendFormat(&body_, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\"/>\n",
                          x0, y0, x1, y1, Colour(c));
  }
  void Disk(int cx, int cy, int radius, Rgb c) {
    absl::StrAppendFormat(&body_, "<circle cx=\"%d\" cy=\"%d\" r=\"%d\" fill=\"%s\"/>\n", cx, cy,
                          radius, Colour(c));
  }
  // Text with its top-left corner at (x, y), `scale` times the base size. `vertical` turns it a
  // quarter counter-clockwise, reading upwards from (x, y), for the y-axis label.
  void Text(int x, int y, const std::string& text, Rgb c, int scale = 1, bool vertical = false) {
    const int size = kTextHeight * scale;
    // SVG places text by its baseline: about 0.8 em below the top.
    const int baseline = static_cast<int>(std::lround(0.8 * size));
    if (vertical) {
      absl::StrAppendFormat(&body_,
                            "<text transform=\"translate(%d %d) rotate(-90)\" font-size=\"%d\" "
                            "fill=\"%s\">%s</text>\n",
                            x + baseline, y, size, Colour(c), Escaped(text));
    } else {
      absl::StrAppendFormat(&body_,
                            "<text x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"%s\">%s</text>\n", x,
                            y + baseline, size, Colour(c), Escaped(text));
    }
  }
  static int TextWidth(const std::string& text, int scale = 1) {
    return static_cast<int>(std::lround(static_cast<double>(text.size()) * kCharWidth * scale));
  }

  std::string Svg() const {
    return absl::StrCat(
        absl::StrFormat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                        "viewBox=\"0 0 %d %d\" font-family=\"monospace\">\n",
                        width_, height_, width_, height_),
        absl::StrFormat("<rect width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", width_, height_,
                        Colour(kWhite)),
        body_, "</svg>\n");
  }

 private:
  int width_, height_;
  std::string body_;
};

// Multiples of `step` from the one at or below lo to the one at or above hi; the tolerance keeps
// a bound that is a multiple up to rounding from adding a tick.
std::vector<double> MultiplesCovering(double lo, double hi, double step) {
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last; ++k) ticks.push_back(k == 0 ? 0.0 : k * step);
  return ticks;
}

// A label with as many decimals as the step needs; scientific beyond what fits in a few digits.
std::string TickLabel(double v, double step) {
  if (v == 0) return "0";
  const double magnitude = std::max(std::abs(v), step);
  if (magnitude >= 1e6 || step < 1e-4) return absl::StrFormat("%.3g", v);
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  return absl::StrFormat("%.*f", decimals, v);
}

// One axis: its range in plot coordinates (log10 of the value on a log axis), its ticks as
// values, and the pixel span it maps onto (pixel_hi may be below pixel_lo, as on the y axis).
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  int pixel_lo = 0, pixel_hi = 1;

  double Coordinate(double v) const { return log ? std::log10(v) : v; }
  int Pixel(double v) const {
    const double t = (Coordinate(v) - lo) / (hi - lo);
    return pixel_lo + static_cast<int>(std::lround(t * (pixel_hi - pixel_lo)));
  }
  std::string Label(double v) const {
    if (log) return absl::StrFormat("%g", v);
    return TickLabel(v, ticks.size() > 1 ? ticks[1] - ticks[0] : 1);
  }
};

Axis MakeAxis(double data_lo, double data_hi, bool log) {
  Axis axis;
  axis.log = log;
  if (log && !(data_lo > 0 && std::isfinite(data_hi))) {
    axis.ticks = LogTicks(1, 10);  // No data.
  } else if (log) {
    // 5 % of the log span on either side keeps markers off the frame.
    const double pad = std::pow(10, 0.05 * std::log10(data_hi / data_lo));
    axis.ticks = LogTicks(data_lo / pad, data_hi * pad);
  } else {
    if (!std::isfinite(data_lo) || !std::isfinite(data_hi)) data_lo = 0, data_hi = 1;
    axis.ticks = NiceTicks(data_lo, data_hi);
  }
  axis.lo = axis.Coordinate(axis.ticks.front());
  axis.hi = axis.Coordinate(axis.ticks.back());
  return axis;
}

bool Usable(const PlotPoint& p, bool log_x) {
  return std::isfinite(p.x) && std::isfinite(p.y) && (!log_x || p.x > 0);
}

bool HasBar(const PlotPoint& p) { return std::isfinite(p.y_lo) && std::isfinite(p.y_hi); }

// Each series' usable points in x order (the order its joining line follows).
std::vector<std::vector<PlotPoint>> UsablePoints(const Plot& plot) {
  std::vector<std::vector<PlotPoint>> out(plot.series.size());
  for (size_t s = 0; s < plot.series.size(); ++s) {
    for (const PlotPoint& p : plot.series[s].points) {
      if (Usable(p, plot.log_x)) out[s].push_back(p);
    }
    std::stable_sort(out[s].begin(), out[s].end(),
                     [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
  }
  return out;
}

// The axes over the data, error bars included; [0, 1] (or [1, 10] on a log axis) with no data.
std::pair<Axis, Axis> MakeAxes(const std::vector<std::vector<PlotPoint>>& points, bool log_x) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double x_lo = kInf, x_hi = -kInf, y_lo = kInf, y_hi = -kInf;
  for (const auto& series : points) {
    for (const PlotPoint& p : series) {
      x_lo = std::min(x_lo, p.x), x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, p.y), y_hi = std::max(y_hi, p.y);
      if (HasBar(p)) {
        y_lo = std::min({y_lo, p.y_lo, p.y_hi});
        y_hi = std::max({y_hi, p.y_lo, p.y_hi});
      }
    }
  }
  if (!log_x && std::isfinite(x_lo)) {  // 5 % on either side keeps markers off the frame.
    const double pad = 0.05 * (x_hi - x_lo);
    x_lo -= pad, x_hi += pad;
  }
  return {MakeAxis(x_lo, x_hi, log_x), MakeAxis(y_lo, y_hi, /*log=*/false)};
}

// The pixel box of the data area: room on the left for the y tick labels and the y label, on
// the right for the legend (at most a third of the width), on top for the title.
struct Frame {
  int left, right, top, bottom;
  int legend_width;
};

Frame Layout(const Plot& plot, const Axis& y, const std::vector<std::vector<PlotPoint>>& points) {
  int label_width = 0;
  for (double t : y.ticks) label_width = std::max(label_width, Canvas::TextWidth(y.Label(t)));
  int name_width = 0;
  for (size_t s = 0; s < plot.series.size(); ++s) {
    if (!points[s].empty()) {
      name_width = std::max(name_width, Canvas::TextWidth(plot.series[s].name));
    }
  }
  Frame f;
  f.legend_width = name_width == 0 ? 0 : std::min(name_width + 40, plot.width / 3);
  f.left = 12 + kTextHeight + 10 + label_width + kTickLength + 4;
  f.right = plot.width - 20 - (f.legend_width == 0 ? 0 : f.legend_width + 15);
  f.top = 24 + 2 * kTextHeight;
  f.bottom = plot.height - (kTickLength + 10 + 2 * kTextHeight + 16);
  return f;
}

void DrawAxes(Canvas& canvas, const Frame& f, const Axis& x, const Axis& y) {
  for (double t : x.ticks) {
    const int px = x.Pixel(t);
    canvas.Line(px, f.top, px, f.bottom, kGrid);
    canvas.Line(px, f.bottom, px, f.bottom + kTickLength, kBlack);
    const std::string label = x.Label(t);
    canvas.Text(px - Canvas::TextWidth(label) / 2, f.bottom + kTickLength + 4, label, kBlack);
  }
  for (double t : y.ticks) {
    const int py = y.Pixel(t);
    canvas.Line(f.left, py, f.right, py, kGrid);
    canvas.Line(f.left - kTickLength, py, f.left, py, kBlack);
    const std::string label = y.Label(t);
    canvas.Text(f.left - kTickLength - 4 - Canvas::TextWidth(label), py - kTextHeight / 2 + 1,
                label, kBlack);
  }
  canvas.Box(f.left, f.top, f.right, f.bottom, kBlack);
}

void DrawLabels(Canvas& canvas, const Plot& plot, const Frame& f) {
  // Centred, or from the left edge when too long to centre, so its start stays readable.
  const int title_x = std::max(4, (plot.width - Canvas::TextWidth(plot.title, 2)) / 2);
  canvas.Text(title_x, 12, plot.title, kBlack, 2);
  canvas.Text((f.left + f.right - Canvas::TextWidth(plot.x_label)) / 2,
              f.bottom + kTickLength + 10 + kTextHeight + 6, plot.x_label, kBlack);
  canvas.Text(12, (f.top + f.bottom + Canvas::TextWidth(plot.y_label)) / 2, plot.y_label, kBlack, 1,
              /*vertical=*/true);
}

// Joining lines first, then error bars, then markers, so markers stay visible on top.
void DrawSeries(Canvas& canvas, const std::vector<PlotPoint>& points, const Axis& x, const Axis& y,
                Rgb color) {
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    canvas.Line(x.Pixel(points[i].x), y.Pixel(points[i].y), x.Pixel(points[i + 1].x),
                y.Pixel(points[i + 1].y), color);
  }
  for (const PlotPoint& p : points) {
    if (!HasBar(p)) continue;
    const int px = x.Pixel(p.x), lo = y.Pixel(p.y_lo), hi = y.Pixel(p.y_hi);
    canvas.Line(px, lo, px, hi, color);
    canvas.Line(px - kCapHalfWidth, lo, px + kCapHalfWidth, lo, color);
    canvas.Line(px - kCapHalfWidth, hi, px + kCapHalfWidth, hi, color);
  }
  for (const PlotPoint& p : points) canvas.Disk(x.Pixel(p.x), y.Pixel(p.y), kMarkerRadius, color);
}

void DrawLegend(Canvas& canvas, const Plot& plot, const Frame& f,
                const std::vector<std::vector<PlotPoint>>& points) {
  if (f.legend_width == 0) return;
  constexpr int kRowHeight = 16;
  const int x0 = f.right + 15, x1 = x0 + f.legend_width;
  int y = f.top + 8;
  for (size_t s = 0; s < plot.series.size(); ++s) {
    if (points[s].empty()) continue;
    const Rgb color = kPalette[s % std::size(kPalette)];
    const int mid = y + kTextHeight / 2;
    canvas.Line(x0 + 6, mid, x0 + 24, mid, color);
    canvas.Disk(x0 + 15, mid, kMarkerRadius - 1, color);
    canvas.Text(x0 + 32, y, plot.series[s].name, kBlack);
    y += kRowHeight;
  }
  canvas.FillRect(x1 + 1, f.top, plot.width - 1, y, kWhite);  // Clip names that do not fit.
  canvas.Box(x0, f.top, x1, y, kBlack);
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (lo > hi) std::swap(lo, hi);
  if (hi - lo <= 1e-12 * std::max(1.0, std::abs(lo))) {
    const double widen = lo == 0 ? 1 : 0.1 * std::abs(lo);
    lo -= widen, hi += widen;
  }
  // Steps grow by ×2 or ×2.5: the first step with at most 8 ticks follows one with at least 9,
  // which makes it at least 4. 1 × 10^k below span/8 always gives more than 8, so the search
  // starts there, and 20 × 10^k always gives at most 7, so it ends there.
  const double magnitude = std::pow(10, std::floor(std::log10((hi - lo) / 8)));
  std::vector<double> ticks;
  for (double m : {1.0, 2.0, 5.0, 10.0, 20.0}) {
    ticks = MultiplesCovering(lo, hi, m * magnitude);
    if (ticks.size() <= 8) break;
  }
  return ticks;
}

std::vector<double> LogTicks(double lo, double hi) {
  if (!(lo > 0) || !std::isfinite(hi) || !std::isfinite(lo)) lo = 1, hi = 10;
  if (lo > hi) std::swap(lo, hi);
  if (hi < 10 * lo) {
    std::vector<double> linear = NiceTicks(lo, hi);
    if (linear.front() > 0) return linear;
  }
  const double k0 = std::floor(std::log10(lo) + 1e-9);
  const double k1 = std::max(k0 + 1, std::ceil(std::log10(hi) - 1e-9));
  std::vector<double> ticks;
  if (k1 - k0 <= 2) {
    for (double k = k0; k < k1; ++k) {
      for (double m : {1.0, 2.0, 5.0}) ticks.push_back(m * std::pow(10, k));
    }
    ticks.push_back(std::pow(10, k1));
    return ticks;
  }
  // Every s-th power of ten, s the smallest keeping 8 or fewer; s − 1 gave 9 or more, so this
  // gives at least 5 (and at least 4 when s = 1, which needs 3 decades or more).
  for (double s = 1;; ++s) {
    const double first = std::floor(k0 / s) * s, last = std::ceil(k1 / s) * s;
    if ((last - first) / s + 1 > 8) continue;
    for (double k = first; k <= last; k += s) ticks.push_back(std::pow(10, k));
    return ticks;
  }
}

absl::StatusOr<std::string> RenderPlotSvg(const Plot& plot) {
  if (plot.width < kMinWidth || plot.width > kMaxSide || plot.height < kMinHeight ||
      plot.height > kMaxSide) {
    return absl::InvalidArgumentError(absl::StrCat("plot: size ", plot.width, "x", plot.height,
                                                   " is outside ", kMinWidth, "x", kMinHeight,
                                                   " to ", kMaxSide, "x", kMaxSide));
  }
  const std::vector<std::vector<PlotPoint>> points = UsablePoints(plot);
  auto [x, y] = MakeAxes(points, plot.log_x);
  const Frame f = Layout(plot, y, points);
  x.pixel_lo = f.left, x.pixel_hi = f.right;
  y.pixel_lo = f.bottom, y.pixel_hi = f.top;
  Canvas canvas(plot.width, plot.height);
  DrawAxes(canvas, f, x, y);
  for (size_t s = 0; s < points.size(); ++s) {
    DrawSeries(canvas, points[s], x, y, kPalette[s % std::size(kPalette)]);
  }
  DrawLegend(canvas, plot, f, points);
  DrawLabels(canvas, plot, f);
  return canvas.Svg();
}

absl::Status WritePlotSvg(const Plot& plot, const std::string& path) {
  absl::StatusOr<std::string> svg = RenderPlotSvg(plot);
  if (!svg.ok()) return svg.status();
  return base::WriteFileAtomically(path, *svg);
}

}  // namespace arbor::tools::eval
