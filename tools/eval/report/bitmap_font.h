// A 5×8 bitmap font for the plot's text, so rendering a PNG needs no font library: printable
// ASCII 32–126 in both cases. Rows 0–6 hold capitals and digits, row 7 the descenders of
// g, j, p, q, y and the tails of , and ;. Each row is 5 bits, the most significant bit leftmost.
#ifndef ARBOR_TOOLS_EVAL_REPORT_BITMAP_FONT_H_
#define ARBOR_TOOLS_EVAL_REPORT_BITMAP_FONT_H_

#include <array>
#include <cstdint>

namespace arbor::eval {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 8;
// Horizontal distance from one character to the next: the glyph and one blank column.
inline constexpr int kGlyphAdvance = kGlyphWidth + 1;

using GlyphRows = std::array<uint8_t, kGlyphHeight>;

// The rows of `c`; a hollow box for characters outside printable ASCII, so a missing glyph shows
// as a visible gap rather than silently disappearing.
GlyphRows Glyph(char c);

}  // namespace arbor::eval

#endif  // ARBOR_TOOLS_EVAL_REPORT_BITMAP_FONT_H_
