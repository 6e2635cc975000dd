#include "tools/eval/report/png_plot.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/eval/report/bitmap_font.h"

namespace arbor::eval {
namespace {

struct Rgb {
  uint8_t r, g, b;
};

constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225};
// Okabe–Ito: distinguishable with the common colour-vision deficiencies.
constexpr Rgb kPalette[] = {{0, 114, 178}, {213, 94, 0},   {0, 158, 115}, {204, 121, 167},
                            {230, 159, 0}, {86, 180, 233}, {0, 0, 0},     {240, 228, 66}};
constexpr int kLeft = 90, kRight = 230, kTop = 50, kBottom = 70;

class Canvas {
 public:
  Canvas(int width, int height)
      : width_(width), height_(height), pixels_(static_cast<size_t>(width) * height * 3, 255) {}

  void Set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    uint8_t* p = &pixels_[(static_cast<size_t>(y) * width_ + x) * 3];
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }
  void Rect(int x0, int y0, int x1, int y1, Rgb c) {
    for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y) {
      for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) Set(x, y, c);
    }
  }
  void Line(int x0, int y0, int x1, int y1, Rgb c) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    for (int err = dx + dy;;) {
      Set(x0, y0, c);
      if (x0 == x1 && y0 == y1) return;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  // Text with its top-left corner at (x, y); `vertical` runs it upwards.
  void Text(int x, int y, const std::string& text, Rgb c, int scale = 1, bool vertical = false) {
    for (size_t i = 0; i < text.size(); ++i) {
      const auto rows = Glyph(text[i]);
      for (int r = 0; r < kGlyphHeight; ++r) {
        for (int col = 0; col < kGlyphWidth; ++col) {
          if (!(rows[r] & (1 << (kGlyphWidth - 1 - col)))) continue;
          const int along = static_cast<int>(i) * (kGlyphWidth + 1) * scale + col * scale;
          for (int a = 0; a < scale; ++a) {
            for (int b = 0; b < scale; ++b) {
              if (vertical) {
                Set(x + r * scale + b, y - along - a, c);
              } else {
                Set(x + along + a, y + r * scale + b, c);
              }
            }
          }
        }
      }
    }
  }
  static int TextWidth(const std::string& text, int scale = 1) {
    return static_cast<int>(text.size()) * (kGlyphWidth + 1) * scale;
  }

  // The PNG file: signature, IHDR, one zlib IDAT of filter-0 rows, IEND.
  absl::StatusOr<std::string> Encode() const {
    std::string raw;
    raw.reserve(static_cast<size_t>(height_) * (1 + width_ * 3));
    for (int y = 0; y < height_; ++y) {
      raw.push_back('\0');
      raw.append(reinterpret_cast<const char*>(&pixels_[static_cast<size_t>(y) * width_ * 3]),
                 static_cast<size_t>(width_) * 3);
    }
    uLongf size = compressBound(raw.size());
    std::string compressed(size, '\0');
    if (compress2(reinterpret_cast<Bytef*>(compressed.data()), &size,
                  reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 9) != Z_OK) {
      return absl::InternalError("plot: zlib compression failed");
    }
    compressed.resize(size);
    std::string png = "\x89PNG\r\n\x1a\n";
    std::string header;
    Be32(header, width_);
    Be32(header, height_);
    header += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB, no interlace.
    Chunk(png, "IHDR", header);
    Chunk(png, "IDAT", compressed);
    Chunk(png, "IEND", "");
    return png;
  }

 private:
  static void Be32(std::string& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
  }
  static void Chunk(std::string& png, const char* type, const std::string& data) {
    Be32(png, static_cast<uint32_t>(data.size()));
    const std::string body = std::string(type, 4) + data;
    png += body;
    Be32(png,
         static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size())));
  }

  int width_, height_;
  std::vector<uint8_t> pixels_;
};

// Ticks at 1, 2 or 5 × 10^k covering [lo, hi], 4–8 of them.
std::vector<double> NiceTicks(double lo, double hi) {
  const double span = hi - lo;
  const double raw = span / 6;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (span / step <= 8) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

std::string TickLabel(double v) {
  std::string s = absl::StrFormat("%.4g", v);
  return s;
}

bool Usable(const PlotPoint& p, bool log_x) {
  return std::isfinite(p.x) && std::isfinite(p.y) && (!log_x || p.x > 0);
}

}  // namespace

absl::StatusOr<std::string> RenderPlotPng(const Plot& plot) {
  Canvas canvas(plot.width, plot.height);
  auto fx = [&](double x) { return plot.log_x ? std::log10(x) : x; };
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const PlotSeries& series : plot.series) {
    for (const PlotPoint& p : series.points) {
      if (!Usable(p, plot.log_x)) continue;
      x_lo = std::min(x_lo, fx(p.x)), x_hi = std::max(x_hi, fx(p.x));
      y_lo = std::min({y_lo, p.y, std::isfinite(p.y_lo) ? p.y_lo : p.y});
      y_hi = std::max({y_hi, p.y, std::isfinite(p.y_hi) ? p.y_hi : p.y});
    }
  }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  // Some room around the points, and a non-empty range.
  const double x_pad = std::max((x_hi - x_lo) * 0.1, 0.1),
               y_pad = std::max((y_hi - y_lo) * 0.1, 0.05);
  x_lo -= x_pad, x_hi += x_pad, y_lo -= y_pad, y_hi += y_pad;
  const int left = kLeft, right = plot.width - kRight, top = kTop, bottom = plot.height - kBottom;
  auto px = [&](double x) {
    return left + static_cast<int>(std::lround((fx(x) - x_lo) / (x_hi - x_lo) * (right - left)));
  };
  auto py = [&](double y) {
    return bottom - static_cast<int>(std::lround((y - y_lo) / (y_hi - y_lo) * (bottom - top)));
  };
  // Grid and tick labels.
  std::vector<double> x_ticks;
  if (plot.log_x) {
    for (int k = static_cast<int>(std::floor(x_lo)); k <= static_cast<int>(std::ceil(x_hi)); ++k) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10, k);
        if (std::log10(v) >= x_lo && std::log10(v) <= x_hi) x_ticks.push_back(v);
      }
    }
  } else {
    x_ticks = NiceTicks(x_lo, x_hi);
  }
  for (double t : x_ticks) {
    const int x = px(t);
    canvas.Line(x, top, x, bottom, kGrid);
    const std::string label = TickLabel(t);
    canvas.Text(x - Canvas::TextWidth(label) / 2, bottom + 8, label, kBlack);
  }
  for (double t : NiceTicks(y_lo, y_hi)) {
    const int y = py(t);
    canvas.Line(left, y, right, y, kGrid);
    const std::string label = TickLabel(t);
    canvas.Text(left - 8 - Canvas::TextWidth(label), y - kGlyphHeight / 2, label, kBlack);
  }
  canvas.Line(left, bottom, right, bottom, kBlack);
  canvas.Line(left, top, left, bottom, kBlack);
  // Titles.
  canvas.Text((plot.width - Canvas::TextWidth(plot.title, 2)) / 2, 15, plot.title, kBlack, 2);
  canvas.Text((left + right - Canvas::TextWidth(plot.x_label)) / 2, bottom + 35, plot.x_label,
              kBlack);
  canvas.Text(20, (top + bottom + Canvas::TextWidth(plot.y_label)) / 2, plot.y_label, kBlack, 1,
              /*vertical=*/true);
  // Series: lines between points in x order, error bars, markers; legend entries.
  for (size_t s = 0; s < plot.series.size(); ++s) {
    const PlotSeries& series = plot.series[s];
    const Rgb color = kPalette[s % std::size(kPalette)];
    std::vector<PlotPoint> points;
    for (const PlotPoint& p : series.points) {
      if (Usable(p, plot.log_x)) points.push_back(p);
    }
    std::sort(points.begin(), points.end(),
              [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      canvas.Line(px(points[i].x), py(points[i].y), px(points[i + 1].x), py(points[i + 1].y),
                  color);
    }
    for (const PlotPoint& p : points) {
      const int x = px(p.x), y = py(p.y);
      if (std::isfinite(p.y_lo) && std::isfinite(p.y_hi)) {
        canvas.Line(x, py(p.y_lo), x, py(p.y_hi), color);
        canvas.Line(x - 4, py(p.y_lo), x + 4, py(p.y_lo), color);
        canvas.Line(x - 4, py(p.y_hi), x + 4, py(p.y_hi), color);
      }
      canvas.Rect(x - 3, y - 3, x + 3, y + 3, color);
    }
    const int ly = top + 10 + static_cast<int>(s) * 18;
    canvas.Rect(right + 20, ly, right + 28, ly + 8, color);
    canvas.Text(right + 36, ly + 1, series.name, kBlack);
  }
  return canvas.Encode();
}

absl::Status WritePlotPng(const Plot& plot, const std::string& path) {
  absl::StatusOr<std::string> png = RenderPlotPng(plot);
  if (!png.ok()) return png.status();
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << *png;
    if (!out.flush()) return absl::UnavailableError(absl::StrCat(path, ": cannot write the plot"));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat(path, ": cannot write the plot"));
  }
  return absl::OkStatus();
}

}  // namespace arbor::eval
