// Display width (what a terminal shows, not bytes or code points), truncation with an ellipsis,
// table cells, and flowing token text: the pieces that keep tables aligned and tokens harmless.
#include "views/tree_display.h"

#include <gtest/gtest.h>

namespace arbor::views {
namespace {

TEST(DisplayWidth, CountsColumnsNotBytes) {
  EXPECT_EQ(DisplayWidth(""), 0);
  EXPECT_EQ(DisplayWidth("abc"), 3);
  EXPECT_EQ(DisplayWidth("é"), 1);          // Two bytes.
  EXPECT_EQ(DisplayWidth("e\xCC\x81"), 1);  // e + combining acute.
  EXPECT_EQ(DisplayWidth("世界"), 4);       // CJK: two columns each.
  EXPECT_EQ(DisplayWidth("😀"), 2);          // Emoji.
  EXPECT_EQ(DisplayWidth("한"), 2);         // Hangul syllable.
  EXPECT_EQ(DisplayWidth("ｱ"), 1);          // Halfwidth katakana.
  EXPECT_EQ(DisplayWidth("\xff"
                         "a"),
            2);                            // An invalid byte is one replacement column.
  EXPECT_EQ(DisplayWidth("\xE4\xB8"), 2);  // A truncated sequence: a column per byte.
  EXPECT_EQ(DisplayWidth("…"), 1);
}

TEST(DisplayWidth, TruncatesAtCodePointsWithAnEllipsis) {
  EXPECT_EQ(TruncateToWidth("abcdef", 6), "abcdef");
  EXPECT_EQ(TruncateToWidth("abcdef", 4), "abc…");
  EXPECT_EQ(TruncateToWidth("世界世界", 5), "世界…");
  EXPECT_EQ(TruncateToWidth("世界世界", 4), "世…");  // A wide character never straddles the end.
  EXPECT_EQ(DisplayWidth(TruncateToWidth("世界世界", 4)), 3);
  EXPECT_EQ(TruncateToWidth("abc", 0), "");
}

TEST(DisplayWidth, TokenCellsPadToTheSameWidth) {
  EXPECT_EQ(TokenCell("ab", 8), "\"ab\"    ");
  EXPECT_EQ(TokenCell("世界", 8), "\"世界\"  ");
  EXPECT_EQ(TokenCell("a\nb", 8), "\"a\\nb\"  ");
  EXPECT_EQ(TokenCell("abcdefghij", 8), "\"abcde…\"");
  for (const char* token : {"x", "世界世界世界", "😀😀😀😀", "\x1b[2J", "long long token"}) {
    EXPECT_EQ(DisplayWidth(TokenCell(token, 10)), 10) << token;
  }
}

TEST(FlowTokenText, KeepsNewlinesAndEscapesTheRest) {
  EXPECT_EQ(FlowTokenText("a\nb\x1b[31m\tc\\"), "a\nb\\x1b[31m\\tc\\\\");
  EXPECT_EQ(FlowTokenText("\n\n"), "\n\n");
}

}  // namespace
}  // namespace arbor::views
