#include "views/committed_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/test_seed.h"

namespace arbor::views {
namespace {

v1::GenerateEvent Token(int node, const std::string& text) {
  v1::GenerateEvent e;
  e.set_job_id("j");
  e.mutable_token()->set_node_id(node);
  e.mutable_token()->set_token_id(100 + node);
  e.mutable_token()->set_text(text);
  e.mutable_token()->set_logprob(-0.5f);
  return e;
}
v1::GenerateEvent Backspace(int node) {
  v1::GenerateEvent e;
  e.mutable_backspace()->set_removed_node_id(node);
  return e;
}
v1::GenerateEvent Insert(int node, const std::string& text) {
  v1::GenerateEvent e;
  e.mutable_insert()->add_node_ids(node);
  e.mutable_insert()->add_token_ids(7);
  e.mutable_insert()->add_logprobs(-3.0f);
  e.mutable_insert()->set_text(text);
  return e;
}
v1::GenerateEvent Finished() {
  v1::GenerateEvent e;
  e.mutable_finished()->set_reason(v1::FINISH_REASON_STOP_TOKEN);
  return e;
}

std::string Text(CommittedStream& stream, const v1::GenerateEvent& event) {
  absl::StatusOr<FinalPiece> piece = stream.Push(event);
  EXPECT_TRUE(piece.ok()) << piece.status();
  return piece.ok() ? piece->text : "<error>";
}

TEST(CommittedStreamTest, HoldsTheTailUntilItCannotBeBackspaced) {
  CommittedStream s;
  EXPECT_EQ(Text(s, Token(1, "Hel")), "");
  EXPECT_EQ(s.job_id(), "j");
  EXPECT_EQ(Text(s, Token(2, "lo")), "Hel");
  EXPECT_EQ(Text(s, Backspace(2)), "");  // "lo" was never shown.
  EXPECT_EQ(Text(s, Token(3, "p")), "");
  EXPECT_EQ(Text(s, Insert(4, " ...")), "p ...");  // Inserts are final at once.
  EXPECT_EQ(Text(s, Token(5, "!")), "");
  EXPECT_FALSE(s.finished().has_value());
  absl::StatusOr<FinalPiece> last = s.Push(Finished());
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->text, "!");
  ASSERT_EQ(last->tokens.size(), 1u);
  EXPECT_EQ(last->tokens[0].id, 105);
  EXPECT_FLOAT_EQ(last->tokens[0].logprob, -0.5f);
  EXPECT_TRUE(s.finished().has_value());
}

// A token the job marks final (its policy cannot backspace it) is released with its own event;
// one that is not still waits for the next.
TEST(CommittedStreamTest, FinalTokensAreReleasedAtOnce) {
  CommittedStream s;
  v1::GenerateEvent first = Token(1, "Hel");
  first.mutable_token()->set_final(true);
  EXPECT_EQ(Text(s, first), "Hel");
  EXPECT_EQ(Text(s, Token(2, "lo")), "");
  v1::GenerateEvent third = Token(3, "!");
  third.mutable_token()->set_final(true);
  EXPECT_EQ(Text(s, third), "lo!");
  absl::StatusOr<FinalPiece> last = s.Push(Finished());
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->empty());
  // A backspace can only name the held token: a final one is a broken contract.
  CommittedStream t;
  EXPECT_EQ(Text(t, first), "Hel");
  EXPECT_FALSE(t.Push(Backspace(1)).ok());
}

// Clients that mark retractions (the terminal's metrics table) get the backspaced token back;
// every released token carries the piece it added to the text.
TEST(CommittedStreamTest, ABackspaceHandsBackWhatItRetracted) {
  CommittedStream s;
  ASSERT_TRUE(s.Push(Token(1, "Hel")).ok());
  absl::StatusOr<FinalPiece> released = s.Push(Token(2, "lo"));
  ASSERT_TRUE(released.ok());
  ASSERT_EQ(released->tokens.size(), 1u);
  EXPECT_EQ(released->tokens[0].piece, "Hel");
  absl::StatusOr<FinalPiece> retracted = s.Push(Backspace(2));
  ASSERT_TRUE(retracted.ok());
  EXPECT_TRUE(retracted->empty());
  ASSERT_TRUE(retracted->retracted.has_value());
  EXPECT_EQ(retracted->retracted->piece, "lo");
  EXPECT_EQ(retracted->retracted->id, 102);
}

TEST(CommittedStreamTest, InsertTokensCarryTheirLogprobAndStrategy) {
  CommittedStream s;
  absl::StatusOr<FinalPiece> piece = s.Push(Insert(1, " ..."));
  ASSERT_TRUE(piece.ok());
  ASSERT_EQ(piece->tokens.size(), 1u);
  EXPECT_EQ(piece->tokens[0].strategy, v1::STRATEGY_INSERT);
  EXPECT_FLOAT_EQ(piece->tokens[0].logprob, -3.0f);
}

TEST(CommittedStreamTest, ABackspaceOfAnythingButTheHeldTokenIsAnError) {
  CommittedStream s;
  ASSERT_TRUE(s.Push(Token(1, "a")).ok());
  ASSERT_TRUE(s.Push(Token(2, "b")).ok());
  EXPECT_EQ(s.Push(Backspace(1)).status().code(), absl::StatusCode::kInternal);
  CommittedStream empty;
  EXPECT_EQ(empty.Push(Backspace(1)).status().code(), absl::StatusCode::kInternal);
}

// Random jobs that keep the coordinator's contract (only the generated tail is backspaced, a
// position at most once): what is released, concatenated, is always a prefix of the committed
// text and equals it at the end.
TEST(CommittedStreamTest, ReleasedTextIsAlwaysFinalOnRandomJobs) {
  const unsigned seed = TestSeed();
  std::mt19937 rng(seed);
  for (int job = 0; job < 200; ++job) {
    CommittedStream s;
    struct Committed {
      int node;
      std::string text;
      bool generated;
    };
    std::vector<Committed> path;
    std::vector<bool> backspaced(512, false);
    std::string released;
    int node = 0;
    for (int step = 0; step < 60; ++step) {
      const int kind = static_cast<int>(rng() % 10);
      v1::GenerateEvent e;
      if (kind < 2 && !path.empty() && path.back().generated && !backspaced[path.size() - 1]) {
        // The coordinator re-draws the position at once; that token cannot be backspaced.
        backspaced[path.size() - 1] = true;
        absl::StatusOr<FinalPiece> piece = s.Push(Backspace(path.back().node));
        ASSERT_TRUE(piece.ok()) << "seed " << seed << ": " << piece.status();
        released += piece->text;
        path.pop_back();
        ++node;
        e = Token(node, absl::StrCat("r", node, " "));
        path.push_back({node, e.token().text(), true});
      } else if (kind == 2) {
        ++node;
        e = Insert(node, absl::StrCat("<i", node, ">"));
        path.push_back({node, e.insert().text(), false});
      } else {
        ++node;
        e = Token(node, absl::StrCat("t", node, " "));
        path.push_back({node, e.token().text(), true});
      }
      absl::StatusOr<FinalPiece> piece = s.Push(e);
      ASSERT_TRUE(piece.ok()) << "seed " << seed << ": " << piece.status();
      released += piece->text;
      std::string committed;
      for (const Committed& c : path) committed += c.text;
      ASSERT_EQ(committed.compare(0, released.size(), released), 0)
          << "seed " << seed << ": released text that is no longer committed";
    }
    absl::StatusOr<FinalPiece> piece = s.Push(Finished());
    ASSERT_TRUE(piece.ok());
    released += piece->text;
    std::string committed;
    for (const Committed& c : path) committed += c.text;
    EXPECT_EQ(released, committed) << "seed " << seed;
  }
}

}  // namespace
}  // namespace arbor::views
