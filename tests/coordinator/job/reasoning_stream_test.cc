// ReasoningStream: traces shown whole, one after another in fork order, the one on stage live;
// each position taken once; nothing when the client opted out.
#include "coordinator/job/reasoning_stream.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::coordinator {
namespace {

constexpr int32_t kStop = 25;  // 'z', which no trace shows.

// Token t is the letter 'a' + t.
std::string Letters(absl::Span<const int32_t> tokens) {
  std::string text;
  for (int32_t t : tokens) text += static_cast<char>('a' + t);
  return text;
}

struct Sent {
  int trace;
  int parent;
  std::string text;
  bool operator==(const Sent&) const = default;
};

class ReasoningStreamTest : public ::testing::Test {
 protected:
  ReasoningStream Make(bool enabled = true) {
    return ReasoningStream(
        enabled, Letters, [](int32_t token) { return token == kStop; },
        [this](arbor::v1::ReasoningEvent event) {
          sent_.push_back({event.trace(), event.parent_trace(), event.text()});
        });
  }
  std::vector<Sent> sent_;
};

TEST_F(ReasoningStreamTest, TheFirstTraceStreamsLiveAndTheOthersFollowWhole) {
  ReasoningStream stream = Make();
  stream.Open(/*sequence=*/10, /*parent=*/1, /*position=*/5, /*token=*/0, /*ended=*/false);
  stream.Open(11, 1, 5, 1, false);
  EXPECT_EQ(sent_, (std::vector<Sent>{{0, -1, "a"}})) << "the second trace waits";
  stream.Extend(11, 6, 2);
  stream.Extend(10, 6, 3);
  EXPECT_EQ(sent_, (std::vector<Sent>{{0, -1, "a"}, {0, -1, "d"}}));
  stream.Extend(10, 6, 3);  // Again, with the Run's answer.
  stream.Extend(10, 5, 0);
  EXPECT_EQ(sent_.size(), 2u) << "a position is taken once";
  stream.End(10);
  EXPECT_EQ(sent_, (std::vector<Sent>{{0, -1, "a"}, {0, -1, "d"}, {1, -1, "bc"}}))
      << "the next trace's kept text comes as soon as the one before it ends";
  stream.Extend(11, 7, 4);
  EXPECT_EQ(sent_.back(), (Sent{1, -1, "e"})) << "then it streams live";
  stream.Extend(11, 8, kStop);
  EXPECT_EQ(sent_.back(), (Sent{1, -1, "e"})) << "its end token says nothing";
  stream.Extend(10, 7, 5);
  EXPECT_EQ(sent_.back(), (Sent{1, -1, "e"})) << "an ended trace takes no more";
}

TEST_F(ReasoningStreamTest, NestedTracesNameTheirParentAndEndAllFlushesInOrder) {
  ReasoningStream stream = Make();
  stream.Open(10, std::nullopt, 5, 0, false);
  stream.Open(11, std::nullopt, 5, 1, /*ended=*/true);  // Its candidate stopped it.
  stream.Open(20, 10, 7, 2, false);  // Forked inside trace 0.
  stream.Extend(99, 6, 3);           // No trace: ignored.
  stream.EndAll();
  EXPECT_EQ(sent_, (std::vector<Sent>{{0, -1, "a"}, {1, -1, "b"}, {2, 0, "c"}}));
  stream.Extend(20, 8, 3);
  EXPECT_EQ(sent_.size(), 3u);
}

TEST_F(ReasoningStreamTest, AClientThatOptedOutGetsNothing) {
  ReasoningStream stream = Make(/*enabled=*/false);
  stream.Open(10, std::nullopt, 5, 0, false);
  stream.Extend(10, 6, 1);
  stream.EndAll();
  EXPECT_TRUE(sent_.empty());
}

}  // namespace
}  // namespace arbor::coordinator
