// StreamedText: incremental decoding (short windows, split UTF-8 characters held back until
// complete) and stop strings (a possible match is never streamed; backspace retracts a piece; a
// structured answer is cut only where it is a whole document).
#include <string>
#include <utility>
#include <vector>

#include "coordinator/job/stop_strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::coordinator {
namespace {

// Token i is kBytes[i]; "é" is 0xC3 0xA9, split over tokens 3 and 4.
const std::vector<std::string> kBytes = {"a", "b", "<", "\xC3", "\xA9", "x"};

struct Decoder {
  // Concatenates the bytes and holds back an unfinished trailing character, as the contract
  // asks; records how many tokens each call decoded.
  std::string operator()(absl::Span<const int32_t> ids) {
    windows->push_back(ids.size());
    std::string text;
    for (int32_t id : ids) text += kBytes[id];
    size_t cut = text.size();
    for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
      const unsigned char c = text[text.size() - back];
      if ((c & 0xC0) == 0x80) continue;  // Continuation byte.
      const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (need > back) cut = text.size() - back;
      break;
    }
    return text.substr(0, cut);
  }
  std::vector<size_t>* windows;
};

TEST(StreamedTextTest, DecodesShortWindowsAndHoldsSplitCharacters) {
  std::vector<size_t> windows;
  StreamedText text(Decoder{&windows}, {});
  std::string streamed;
  std::vector<std::string> pieces;
  const std::vector<int32_t> ids = {0, 1, 0, 1, 3, 4, 5, 0, 1, 0, 1, 0};
  for (int32_t id : ids) pieces.push_back(text.Push(id, false).text);
  EXPECT_EQ(pieces[4], "") << "half of é is held back";
  EXPECT_EQ(pieces[5], "\xC3\xA9");
  for (const std::string& p : pieces) streamed += p;
  EXPECT_EQ(streamed, "abab\xC3\xA9xababa");
  EXPECT_EQ(text.text(), streamed);
  for (size_t w : windows) EXPECT_LE(w, 3u) << "never the whole text again";
}

TEST(StreamedTextTest, HoldsBackPossibleStopStringsAndStops) {
  std::vector<size_t> windows;
  StreamedText text(Decoder{&windows}, {"<x", "ba<"});
  EXPECT_EQ(text.Push(0, false).text, "a");
  EXPECT_EQ(text.Push(1, false).text, "") << "'b' may start \"ba<\"";
  EXPECT_EQ(text.Push(0, false).text, "") << "'ba' too";
  EXPECT_EQ(text.Push(1, false).text, "ba") << "'bab' cannot match; 'b' still may";
  EXPECT_EQ(text.Push(0, false).text, "") << "'ba' again";
  const StreamedText::Piece stop = text.Push(2, false);  // "ababa<": "ba<" completes.
  EXPECT_TRUE(stop.stopped);
  EXPECT_EQ(stop.text, "");
  EXPECT_EQ(text.text(), "aba") << "cut before the match; nothing of it was streamed";
}

TEST(StreamedTextTest, LastTokenFlushesAndPopRetracts) {
  std::vector<size_t> windows;
  StreamedText text(Decoder{&windows}, {"<x"});
  EXPECT_EQ(text.Push(0, false).text, "a");
  EXPECT_EQ(text.Push(2, false).text, "") << "'<' may start \"<x\"";
  text.Pop();  // BACKSPACE of '<': its (empty) piece is retracted.
  EXPECT_EQ(text.text(), "a");
  EXPECT_EQ(text.Push(1, false).text, "b");
  EXPECT_EQ(text.Push(2, /*last=*/true).text, "<") << "the job ends: nothing is held";
  EXPECT_EQ(text.text(), "ab<");
}

// Token i is kJson[i], whole pieces of JSON (no split characters).
const std::vector<std::string> kJson = {"{", "\"ok\"", ":",     " ", "true",
                                        "}", "\n",     "false", "1", "0"};

std::string DecodeJson(absl::Span<const int32_t> ids) {
  std::string text;
  for (int32_t id : ids) text += kJson[id];
  return text;
}

arbor::v1::OutputConstraint JsonObject() {
  arbor::v1::OutputConstraint c;
  c.set_json_object(true);
  return c;
}

// Pushes `ids`; returns the streamed text, and whether the last push stopped.
std::pair<std::string, bool> PushAll(StreamedText& text, const std::vector<int32_t>& ids) {
  std::string streamed;
  bool stopped = false;
  for (int32_t id : ids) {
    EXPECT_FALSE(stopped) << "pushed after a stop";
    const StreamedText::Piece piece = text.Push(id, false);
    streamed += piece.text;
    stopped = piece.stopped;
  }
  return {streamed, stopped};
}

TEST(StreamedTextTest, StructuredAnswersStopOnlyWhereTheDocumentIsWhole) {
  // ":" and "}" inside the object do not count; "\n" after it does.
  StreamedText text(DecodeJson, {":", "}", "\n"}, JsonObject());
  const auto [streamed, stopped] = PushAll(text, {0, 1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text.text(), "{\"ok\": true}");
  EXPECT_EQ(streamed, text.text());
  // Without the constraint the first ":" cuts the answer, where it does not parse.
  StreamedText plain(DecodeJson, {":", "}", "\n"});
  EXPECT_TRUE(PushAll(plain, {0, 1, 2}).second);
  EXPECT_EQ(plain.text(), "{\"ok\"");
}

TEST(StreamedTextTest, StructuredStopsFollowBackspaces) {
  StreamedText text(DecodeJson, {"}", "\n"}, JsonObject());
  EXPECT_FALSE(PushAll(text, {0, 1, 2, 3, 4, 5}).second);
  text.Pop();  // "}"
  text.Pop();  // "true"
  const auto [streamed, stopped] = PushAll(text, {7, 5, 6});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text.text(), "{\"ok\": false}");
}

TEST(StreamedTextTest, StructuredStopsCountWhereANumberMayEnd) {
  arbor::v1::OutputConstraint integer;
  integer.set_json_schema(R"({"type": "integer"})");
  StreamedText text(DecodeJson, {"0"}, integer);
  EXPECT_TRUE(PushAll(text, {8, 9}).second);
  EXPECT_EQ(text.text(), "1") << "1 is a whole document: the 0 after it stops";
  StreamedText zero(DecodeJson, {"0"}, integer);
  EXPECT_FALSE(PushAll(zero, {9}).second) << "nothing before the 0 is a document";
}

}  // namespace
}  // namespace arbor::coordinator
