// The PNG plot is a valid PNG: signature, header, CRCs, an inflatable image of filter-0 rows,
// with the series' colours drawn and the background white.
#include "tools/eval/report/png_plot.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>

namespace arbor::eval {
namespace {

uint32_t Be32(const std::string& s, size_t at) {
  return (uint32_t{static_cast<uint8_t>(s[at])} << 24) |
         (uint32_t{static_cast<uint8_t>(s[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(s[at + 2])} << 8) | static_cast<uint8_t>(s[at + 3]);
}

// The decoded RGB rows (filter bytes removed) after checking the file's structure.
std::string Decode(const std::string& png, int width, int height) {
  EXPECT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n");
  std::string idat;
  for (size_t at = 8; at < png.size();) {
    const uint32_t length = Be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string body = png.substr(at + 4, 4 + length);
    EXPECT_EQ(Be32(png, at + 8 + length),
              crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size()))
        << type;
    if (type == "IHDR") {
      EXPECT_EQ(Be32(png, at + 8), static_cast<uint32_t>(width));
      EXPECT_EQ(Be32(png, at + 12), static_cast<uint32_t>(height));
      EXPECT_EQ(png[at + 16], 8);  // Bit depth.
      EXPECT_EQ(png[at + 17], 2);  // RGB.
    }
    if (type == "IDAT") idat += png.substr(at + 8, length);
    at += 12 + length;
  }
  uLongf size = static_cast<uLongf>(height) * (1 + 3 * width);
  std::string raw(size, '\0');
  EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &size,
                       reinterpret_cast<const Bytef*>(idat.data()), idat.size()),
            Z_OK);
  EXPECT_EQ(size, raw.size());
  std::string rgb;
  for (int y = 0; y < height; ++y) {
    EXPECT_EQ(raw[y * (1 + 3 * width)], 0) << "filter of row " << y;
    rgb += raw.substr(y * (1 + 3 * width) + 1, 3 * width);
  }
  return rgb;
}

bool HasColour(const std::string& rgb, uint8_t r, uint8_t g, uint8_t b) {
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    if (static_cast<uint8_t>(rgb[i]) == r && static_cast<uint8_t>(rgb[i + 1]) == g &&
        static_cast<uint8_t>(rgb[i + 2]) == b) {
      return true;
    }
  }
  return false;
}

TEST(PngPlotTest, TwoSeriesRenderAsAValidPng) {
  Plot plot;
  plot.title = "Accuracy against compute";
  plot.x_label = "tokens";
  plot.y_label = "accuracy";
  plot.log_x = true;
  plot.width = 400;
  plot.height = 300;
  plot.series = {{"greedy", {{10, 0.5, 0.4, 0.6}}},
                 {"search", {{40, 0.6, 0.5, 0.7}, {80, 0.65, 0.55, 0.75}}}};
  absl::StatusOr<std::string> png = RenderPlotPng(plot);
  ASSERT_TRUE(png.ok()) << png.status();
  const std::string rgb = Decode(*png, 400, 300);
  EXPECT_TRUE(HasColour(rgb, 0, 114, 178));  // First palette colour.
  EXPECT_TRUE(HasColour(rgb, 213, 94, 0));   // Second.
  for (size_t corner : {size_t{0}, rgb.size() - 3}) {
    EXPECT_EQ(rgb.substr(corner, 3), "\xff\xff\xff");
  }
}

TEST(PngPlotTest, NoPointsStillRendersAndBadPathsFail) {
  Plot plot;
  plot.series = {{"empty", {}}, {"nan", {{NAN, 1, 0, 1}}}};
  absl::StatusOr<std::string> png = RenderPlotPng(plot);
  ASSERT_TRUE(png.ok());
  Decode(*png, plot.width, plot.height);
  const absl::Status bad = WritePlotPng(plot, "/nonexistent-dir/plot.png");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("/nonexistent-dir/plot.png"), std::string::npos);
}

}  // namespace
}  // namespace arbor::eval
