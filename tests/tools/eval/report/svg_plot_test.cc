// The SVG plot: a well-formed document of the declared size, one marker per usable point and one
// legend marker per series in the series' palette colours, escaped text, axes without data;
// written atomically. Also the axis ticks.
#include "tools/eval/report/svg_plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace arbor::tools::eval {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The document's structure: one <svg> root of the given size around only self-closed elements
// and <text> elements, every '&' starting an entity, no stray '<' inside text.
void ExpectWellFormed(const std::string& svg, int width, int height) {
  EXPECT_EQ(svg.rfind(absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", width,
                                   "\" height=\"", height, "\""),
                      0),
            0u)
      << svg.substr(0, 120);
  EXPECT_EQ(Count(svg, "<svg"), 1);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  std::istringstream lines(svg);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("<svg", 0) == 0 || line == "</svg>") continue;
    const bool text = line.rfind("<text", 0) == 0;
    EXPECT_TRUE(text ? line.size() > 7 && line.substr(line.size() - 7) == "</text>"
                     : line.substr(line.size() - 2) == "/>")
        << line;
    if (text) {
      const std::string inner =
          line.substr(line.find('>') + 1, line.size() - 7 - line.find('>') - 1);
      EXPECT_EQ(inner.find('<'), std::string::npos) << line;
    }
    for (size_t amp = line.find('&'); amp != std::string::npos; amp = line.find('&', amp + 1)) {
      const std::string rest = line.substr(amp);
      EXPECT_TRUE(rest.rfind("&lt;", 0) == 0 || rest.rfind("&gt;", 0) == 0 ||
                  rest.rfind("&amp;", 0) == 0 || rest.rfind("&quot;", 0) == 0)
          << line;
    }
  }
}

// Two series of three points each, on a log x axis, with a title that needs escaping.
Plot TwoSeries() {
  Plot plot;
  plot.title = "a <b> & c";
  plot.x_label = "tokens";
  plot.y_label = "accuracy";
  plot.log_x = true;
  plot.width = 400;
  plot.height = 300;
  plot.series = {{"first", {{10, 0.3, 0.2, 0.4}, {20, 0.4, 0.3, 0.5}, {40, 0.5, 0.4, 0.6}}},
                 {"second", {{15, 0.6, 0.5, 0.7}, {30, 0.55, NAN, 0.6}, {60, 0.7, 0.6, 0.8}}}};
  return plot;
}

TEST(SvgPlotTest, TwoSeriesRenderAsAWellFormedDocument) {
  const Plot plot = TwoSeries();
  absl::StatusOr<std::string> svg = RenderPlotSvg(plot);
  ASSERT_TRUE(svg.ok()) << svg.status();
  ExpectWellFormed(*svg, 400, 300);
  // Three markers and a legend marker per series, in the first two palette colours.
  EXPECT_EQ(Count(*svg, "<circle"), 8);
  EXPECT_EQ(Count(*svg, "fill=\"#0072b2\"/>"), 4);
  EXPECT_EQ(Count(*svg, "fill=\"#d55e00\"/>"), 4);
  EXPECT_EQ(Count(*svg, "#009e73"), 0) << "no third series";
  // Lines per series: a bar and two caps per point that has one (the NaN one has none), the
  // joins between its points, and its legend sample.
  EXPECT_EQ(Count(*svg, "stroke=\"#0072b2\""), 3 * 3 + 2 + 1);
  EXPECT_EQ(Count(*svg, "stroke=\"#d55e00\""), 2 * 3 + 2 + 1);
  EXPECT_THAT(*svg, HasSubstr(">a &lt;b&gt; &amp; c</text>"));
  EXPECT_THAT(*svg, HasSubstr(">first</text>"));
  EXPECT_THAT(*svg, HasSubstr("rotate(-90)\" font-size=\"12\" fill=\"#000000\">accuracy</text>"));
}

TEST(SvgPlotTest, LinearAxesAndDefaultSize) {
  Plot plot = TwoSeries();
  plot.log_x = false;
  plot.width = 900;
  plot.height = 600;
  absl::StatusOr<std::string> svg = RenderPlotSvg(plot);
  ASSERT_TRUE(svg.ok()) << svg.status();
  ExpectWellFormed(*svg, 900, 600);
  EXPECT_EQ(Count(*svg, "<circle"), 8);
}

TEST(SvgPlotTest, NoPointsStillRendersAxes) {
  Plot plot;
  plot.title = "empty";
  plot.series = {{"empty", {}}, {"nan", {{NAN, 1, 0, 1}, {1, NAN, 0, 1}}}};
  for (bool log_x : {false, true}) {
    plot.log_x = log_x;
    absl::StatusOr<std::string> svg = RenderPlotSvg(plot);
    ASSERT_TRUE(svg.ok()) << svg.status();
    ExpectWellFormed(*svg, plot.width, plot.height);
    EXPECT_EQ(Count(*svg, "<circle"), 0);
    EXPECT_EQ(svg->find(">empty</text>", svg->find(">empty</text>") + 1), std::string::npos)
        << "a series without points has no legend entry (only the title says empty)";
    EXPECT_GE(Count(*svg, "<line"), 8) << "ticks and grid";
  }
}

TEST(SvgPlotTest, RejectsSizesOutsideTheBounds) {
  Plot plot;
  plot.width = 0;
  EXPECT_EQ(RenderPlotSvg(plot).status().code(), absl::StatusCode::kInvalidArgument);
  plot.width = 900;
  plot.height = 100000;
  EXPECT_EQ(RenderPlotSvg(plot).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SvgPlotTest, WritesTheRenderedDocumentAndNoTemporary) {
  const std::string path = ::testing::TempDir() + "/svg_plot_test_write.svg";
  const Plot plot = TwoSeries();
  ASSERT_TRUE(WritePlotSvg(plot, path).ok());
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  EXPECT_EQ(contents.str(), *RenderPlotSvg(plot));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

TEST(SvgPlotTest, BadPathsFailNamingThePath) {
  const Plot plot = TwoSeries();
  const absl::Status missing_dir = WritePlotSvg(plot, "/nonexistent-dir/plot.svg");
  EXPECT_FALSE(missing_dir.ok());
  EXPECT_THAT(missing_dir.message(), HasSubstr("/nonexistent-dir/plot.svg"));
  // A directory in the way: the temporary is written, the rename fails, and it is cleaned up.
  const std::string dir = ::testing::TempDir() + "/svg_plot_test_dir";
  std::filesystem::create_directories(dir);
  const absl::Status onto_dir = WritePlotSvg(plot, dir);
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

}  // namespace
}  // namespace arbor::tools::eval
