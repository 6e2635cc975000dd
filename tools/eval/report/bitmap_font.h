// A 5×7 bitmap font for the plot's text: digits, capital letters and the punctuation labels
// need. Each glyph is 7 rows of 5 bits, most significant bit leftmost.
#ifndef ARBOR_TOOLS_EVAL_REPORT_BITMAP_FONT_H_
#define ARBOR_TOOLS_EVAL_REPORT_BITMAP_FONT_H_

#include <array>
#include <cstdint>

namespace arbor::eval {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 7;

// The rows of `c` (lower case drawn as upper case); a hollow box for characters not covered.
std::array<uint8_t, kGlyphHeight> Glyph(char c);

}  // namespace arbor::eval

#endif  // ARBOR_TOOLS_EVAL_REPORT_BITMAP_FONT_H_
