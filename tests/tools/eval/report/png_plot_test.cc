// The PNG plot is a valid PNG: signature, header, CRCs, an inflatable image of filter-0 rows,
// with the series' colours drawn and the background white. Also the axis ticks and the font.
#include "tools/eval/report/png_plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tools/eval/report/bitmap_font.h"

namespace arbor::eval {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

uint32_t Be32(const std::string& s, size_t at) {
  return (uint32_t{static_cast<uint8_t>(s[at])} << 24) |
         (uint32_t{static_cast<uint8_t>(s[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(s[at + 2])} << 8) | static_cast<uint8_t>(s[at + 3]);
}

// The decoded RGB rows (filter bytes removed) after checking the file's structure: signature,
// IHDR fields, every chunk's CRC, IEND last, and an IDAT stream that inflates to exactly
// height·(1 + 3·width) bytes with filter byte 0 on every row.
std::string Decode(const std::string& png, int width, int height) {
  EXPECT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n");
  std::string idat, last_type;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = Be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string body = png.substr(at + 4, 4 + length);
    EXPECT_EQ(Be32(png, at + 8 + length),
              crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size()))
        << type;
    if (type == "IHDR") {
      EXPECT_EQ(length, 13u);
      EXPECT_EQ(Be32(png, at + 8), static_cast<uint32_t>(width));
      EXPECT_EQ(Be32(png, at + 12), static_cast<uint32_t>(height));
      EXPECT_EQ(png[at + 16], 8);  // Bit depth.
      EXPECT_EQ(png[at + 17], 2);  // Colour type: RGB.
    }
    if (type == "IDAT") idat += png.substr(at + 8, length);
    last_type = type;
    at += 12 + length;
  }
  EXPECT_EQ(last_type, "IEND");
  const size_t stride = 1 + 3 * static_cast<size_t>(width);
  uLongf size = static_cast<uLongf>(height * stride);
  std::string raw(size + 1, '\0');  // One spare byte: a longer stream would show as size + 1.
  size = raw.size();
  EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &size,
                       reinterpret_cast<const Bytef*>(idat.data()), idat.size()),
            Z_OK);
  EXPECT_EQ(size, height * stride);
  std::string rgb;
  for (int y = 0; y < height; ++y) {
    EXPECT_EQ(raw[y * stride], 0) << "filter of row " << y;
    rgb += raw.substr(y * stride + 1, 3 * width);
  }
  return rgb;
}

int CountColour(const std::string& rgb, uint8_t r, uint8_t g, uint8_t b) {
  int count = 0;
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    count += static_cast<uint8_t>(rgb[i]) == r && static_cast<uint8_t>(rgb[i + 1]) == g &&
             static_cast<uint8_t>(rgb[i + 2]) == b;
  }
  return count;
}

void ExpectWhiteCorners(const std::string& rgb, int width, int height) {
  const size_t w = static_cast<size_t>(width), h = static_cast<size_t>(height);
  for (size_t pixel : {size_t{0}, w - 1, (h - 1) * w, h * w - 1}) {
    EXPECT_EQ(rgb.substr(3 * pixel, 3), "\xff\xff\xff") << "pixel " << pixel;
  }
}

Plot TwoSeries() {
  Plot plot;
  plot.title = "Accuracy against compute";
  plot.x_label = "tokens per answer (generated + explored)";
  plot.y_label = "accuracy (95% CI)";
  plot.log_x = true;
  plot.width = 400;
  plot.height = 300;
  plot.series = {{"greedy", {{10, 0.5, 0.4, 0.6}}},
                 {"search", {{80, 0.65, 0.55, 0.75}, {40, 0.6, 0.5, 0.7}, {NAN, 0.1, 0, 1}}}};
  return plot;
}

TEST(PngPlotTest, TwoSeriesRenderAsAValidPng) {
  const Plot plot = TwoSeries();
  absl::StatusOr<std::string> png = RenderPlotPng(plot);
  ASSERT_TRUE(png.ok()) << png.status();
  const std::string rgb = Decode(*png, 400, 300);
  // The first two palette colours: at least a marker's disk (radius 4: 45+ pixels) of each.
  EXPECT_GE(CountColour(rgb, 0, 114, 178), 45);
  EXPECT_GE(CountColour(rgb, 213, 94, 0), 45);
  EXPECT_EQ(CountColour(rgb, 0, 158, 115), 0);  // No third series.
  EXPECT_GT(CountColour(rgb, 0, 0, 0), 500);    // Axes, ticks and text.
  ExpectWhiteCorners(rgb, 400, 300);
}

TEST(PngPlotTest, LinearAxesAndDefaultSize) {
  Plot plot = TwoSeries();
  plot.log_x = false;
  plot.width = 900;
  plot.height = 600;
  absl::StatusOr<std::string> png = RenderPlotPng(plot);
  ASSERT_TRUE(png.ok()) << png.status();
  const std::string rgb = Decode(*png, 900, 600);
  EXPECT_GE(CountColour(rgb, 0, 114, 178), 45);
  EXPECT_GE(CountColour(rgb, 213, 94, 0), 45);
  ExpectWhiteCorners(rgb, 900, 600);
}

TEST(PngPlotTest, NoPointsStillRendersAxes) {
  Plot plot;
  plot.title = "empty";
  plot.series = {{"empty", {}}, {"nan", {{NAN, 1, 0, 1}, {1, NAN, 0, 1}}}};
  for (bool log_x : {false, true}) {
    plot.log_x = log_x;
    absl::StatusOr<std::string> png = RenderPlotPng(plot);
    ASSERT_TRUE(png.ok()) << png.status();
    const std::string rgb = Decode(*png, plot.width, plot.height);
    EXPECT_GT(CountColour(rgb, 0, 0, 0), 500);  // The frame alone is 2·(w + h) pixels.
    EXPECT_EQ(CountColour(rgb, 0, 114, 178), 0);
    EXPECT_EQ(CountColour(rgb, 213, 94, 0), 0);
    ExpectWhiteCorners(rgb, plot.width, plot.height);
  }
}

TEST(PngPlotTest, RejectsSizesOutsideTheBounds) {
  Plot plot;
  plot.width = 0;
  EXPECT_EQ(RenderPlotPng(plot).status().code(), absl::StatusCode::kInvalidArgument);
  plot.width = 900;
  plot.height = 100000;
  EXPECT_EQ(RenderPlotPng(plot).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PngPlotTest, WritesTheRenderedBytesAndNoTemporary) {
  const std::string path = ::testing::TempDir() + "/png_plot_test_write.png";
  const Plot plot = TwoSeries();
  ASSERT_TRUE(WritePlotPng(plot, path).ok());
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  EXPECT_EQ(contents.str(), *RenderPlotPng(plot));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

TEST(PngPlotTest, BadPathsFailNamingThePath) {
  const Plot plot = TwoSeries();
  const absl::Status missing_dir = WritePlotPng(plot, "/nonexistent-dir/plot.png");
  EXPECT_FALSE(missing_dir.ok());
  EXPECT_THAT(missing_dir.message(), HasSubstr("/nonexistent-dir/plot.png"));
  // A directory in the way: the temporary is written, the rename fails, and it is cleaned up.
  const std::string dir = ::testing::TempDir() + "/png_plot_test_dir";
  std::filesystem::create_directories(dir);
  const absl::Status onto_dir = WritePlotPng(plot, dir);
  EXPECT_FALSE(onto_dir.ok());
  EXPECT_THAT(onto_dir.message(), HasSubstr(dir));
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  std::filesystem::remove(dir);
}

// Ticks are equally spaced, 4–8 of them, cover [lo, hi], and step by 1, 2 or 5 × 10^k.
void ExpectNiceTicks(double lo, double hi) {
  SCOPED_TRACE(testing::Message() << "[" << lo << ", " << hi << "]");
  const std::vector<double> t = NiceTicks(lo, hi);
  ASSERT_GE(t.size(), 4u);
  ASSERT_LE(t.size(), 8u);
  EXPECT_LE(t.front(), lo);
  EXPECT_GE(t.back(), hi);
  const double step = t[1] - t[0];
  for (size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], step, step * 1e-9);
  const double mantissa = step / std::pow(10, std::floor(std::log10(step) + 1e-9));
  EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
              std::abs(mantissa - 5) < 1e-9)
      << "step " << step;
}

TEST(AxisTicksTest, LinearTicksAreNice) {
  EXPECT_THAT(NiceTicks(0, 1), Pointwise(DoubleNear(1e-12), {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  // Steps 0.01, 0.02 and 0.05 would give 43, 23 and 10 ticks.
  EXPECT_THAT(NiceTicks(0.33, 0.75), Pointwise(DoubleNear(1e-12), {0.3, 0.4, 0.5, 0.6, 0.7, 0.8}));
  for (double lo : {-3.0, 0.0, 0.37, 12.5, 999.0}) {
    for (double span : {1e-3, 0.07, 0.5, 1.0, 2.6, 3.3, 7.0, 13.0, 6e5}) {
      ExpectNiceTicks(lo, lo + span);
    }
  }
  ExpectNiceTicks(0.5, 0.5);  // A single value is widened.
  ExpectNiceTicks(0, 0);
}

TEST(AxisTicksTest, LogTicksCoverTheRange) {
  for (double lo : {1e-3, 0.7, 1.0, 8.0, 10.0, 37.0}) {
    for (double ratio : {1.0, 1.5, 4.0, 9.9, 10.0, 50.0, 300.0, 1e4, 1e7, 1e12, 1e20}) {
      const double hi = lo * ratio;
      SCOPED_TRACE(testing::Message() << "[" << lo << ", " << hi << "]");
      const std::vector<double> t = LogTicks(lo, hi);
      ASSERT_GE(t.size(), 4u);
      ASSERT_LE(t.size(), 8u);
      EXPECT_LE(t.front(), lo * (1 + 1e-9));
      EXPECT_GE(t.back(), hi * (1 - 1e-9));
      EXPECT_GT(t.front(), 0);
      for (size_t i = 1; i < t.size(); ++i) EXPECT_GT(t[i], t[i - 1]);
    }
  }
  EXPECT_THAT(LogTicks(10, 100), Pointwise(DoubleNear(1e-9), {10.0, 20.0, 50.0, 100.0}));
  EXPECT_THAT(LogTicks(1, 1e6),
              Pointwise(DoubleNear(1e-6), {1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6}));
  // Within a decade, and positive: linear steps.
  EXPECT_THAT(LogTicks(40, 80), Pointwise(DoubleNear(1e-9), {40.0, 50.0, 60.0, 70.0, 80.0}));
}

TEST(BitmapFontTest, EveryPrintableCharacterHasItsOwnGlyph) {
  const GlyphRows box = Glyph('\x01');
  std::set<GlyphRows> seen;
  for (char c = '!'; c <= '~'; ++c) {
    const GlyphRows g = Glyph(c);
    EXPECT_NE(g, GlyphRows{}) << "'" << c << "' is blank";
    EXPECT_NE(g, box) << "'" << c << "' is the unknown-character box";
    EXPECT_TRUE(seen.insert(g).second) << "'" << c << "' repeats an earlier glyph";
    for (uint8_t row : g) EXPECT_LT(row, 1u << kGlyphWidth) << "'" << c << "' is too wide";
  }
  EXPECT_EQ(Glyph(' '), GlyphRows{});
  // Outside printable ASCII: the box, never a blank.
  for (char c : {'\x7f', '\t', static_cast<char>(0xE9)}) EXPECT_EQ(Glyph(c), box);
  EXPECT_NE(box, GlyphRows{});
}

}  // namespace
}  // namespace arbor::eval
