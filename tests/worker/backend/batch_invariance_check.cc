#include "tests/worker/backend/batch_invariance_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/support/test_seed.h"

namespace arbor::worker::testing {
namespace {

constexpr int kSequences = 13;
constexpr int kBlocksPerSequence = 8;  // Block size 16: 128 positions each.
// CheckSiblings' prompt and branches take 27 blocks after the sequences'.
static_assert(kInvarianceBlocks >= kSequences * kBlocksPerSequence + 27);

// One forward row: sequence `seq`, its tokens [begin, end).
struct Part {
  int seq;
  int begin;
  int end;
};

// A row's outputs: its last token's logits and last-layer attention scores, and its reduction
// when compared.
struct Outputs {
  std::vector<float> logits;
  std::vector<float> scores;
  RowReduction reduction;
};

class Forwards {
 public:
  Forwards(Backend& backend, uint32_t seed, Compared compared)
      : backend_(backend), compared_(compared) {
    std::mt19937 rng(seed);
    const int vocab = backend.config().vocab_size;
    for (int s = 0; s < kSequences; ++s) {
      std::vector<int32_t>& tokens = tokens_.emplace_back();
      const int length = s == 0 ? 37 : 5 + 3 * s;
      for (int i = 0; i <= length; ++i) tokens.push_back(static_cast<int32_t>(rng() % vocab));
      std::vector<int32_t>& blocks = blocks_.emplace_back();
      for (int b = 0; b < kBlocksPerSequence; ++b) blocks.push_back(s * kBlocksPerSequence + b);
    }
  }

  // The prompt of `seq` (its tokens but the last, which decode steps add).
  int prompt(int seq) const { return static_cast<int>(tokens_[seq].size()) - 1; }
  const std::vector<int32_t>& tokens(int seq) const { return tokens_[seq]; }
  const std::vector<int32_t>& blocks(int seq) const { return blocks_[seq]; }
  // A further sequence of `tokens` in `blocks`; its index.
  int Add(std::vector<int32_t> tokens, std::vector<int32_t> blocks) {
    tokens_.push_back(std::move(tokens));
    blocks_.push_back(std::move(blocks));
    return static_cast<int>(tokens_.size()) - 1;
  }

  // One forward of `parts`; the outputs of each.
  std::vector<Outputs> Run(const std::vector<Part>& parts) {
    const int vocab = backend_.config().vocab_size, heads = backend_.config().num_heads;
    std::vector<Outputs> out(parts.size());
    std::vector<ForwardRow> rows;
    for (size_t i = 0; i < parts.size(); ++i) {
      const Part& p = parts[i];
      out[i].logits.resize(vocab);
      out[i].scores.resize(static_cast<size_t>(heads) * p.end);
      rows.push_back(
          {.tokens = std::span<const int32_t>(tokens_[p.seq]).subspan(p.begin, p.end - p.begin),
           .start_pos = p.begin,
           .block_table = blocks_[p.seq],
           .logits = out[i].logits.data(),
           .last_scores = out[i].scores.data()});
      if (compared_.reductions) {
        out[i].reduction.request = {.candidates = 20, .probe_token = tokens_[p.seq][p.end - 1]};
        rows.back().reduction = &out[i].reduction;
      }
    }
    const absl::Status status = backend_.Forward(rows);
    EXPECT_TRUE(status.ok()) << status;
    return out;
  }
  Outputs One(Part part) { return Run({part})[0]; }
  // Every sequence but 0 prefilled alone.
  void PrefillOthers() {
    for (int s = 1; s < kSequences; ++s) One({s, 0, prompt(s)});
  }
  // Sequence 0's decode step beside `others` decode rows, sequence 0 at `at`.
  Outputs DecodeAmong(int others, int at) {
    std::vector<Part> parts;
    for (int s = 1; s <= others; ++s) parts.push_back({s, prompt(s), prompt(s) + 1});
    parts.insert(parts.begin() + at, Part{0, prompt(0), prompt(0) + 1});
    return Run(parts)[at];
  }

 private:
  Backend& backend_;
  const Compared compared_;
  std::vector<std::vector<int32_t>> tokens_;
  std::vector<std::vector<int32_t>> blocks_;
};

void ExpectSame(const Outputs& expected, const Outputs& actual, const std::string& what) {
  ASSERT_EQ(expected.logits.size(), actual.logits.size()) << what;
  EXPECT_EQ(std::memcmp(expected.logits.data(), actual.logits.data(),
                        expected.logits.size() * sizeof(float)),
            0)
      << what << ": logits differ (" << expected.logits[0] << " vs " << actual.logits[0] << ")";
  EXPECT_EQ(std::memcmp(expected.scores.data(), actual.scores.data(),
                        expected.scores.size() * sizeof(float)),
            0)
      << what << ": attention scores differ";
  const RowReduction& want = expected.reduction;
  const RowReduction& got = actual.reduction;
  ASSERT_TRUE(want.status.ok() && got.status.ok()) << what << ": " << want.status << got.status;
  const auto floats = [](const RowReduction& r) {
    const entropix::LogitMetrics& l = r.logits;
    const entropix::AttentionMetrics& a = r.attention;
    return std::vector<float>{
        l.entropy,     l.varentropy,          l.logsumexp,       l.max_logit,
        r.probe_logit, a.attn_entropy,        a.attn_varentropy, a.attn_head_varentropy,
        a.agreement,   a.interaction_strength};
  };
  const std::vector<float> want_floats = floats(want), got_floats = floats(got);
  EXPECT_EQ(std::memcmp(want_floats.data(), got_floats.data(), want_floats.size() * sizeof(float)),
            0)
      << what << ": reductions differ";
  EXPECT_EQ(want.probe_rank, got.probe_rank) << what;
  EXPECT_EQ(want.candidates.ids, got.candidates.ids) << what;
  EXPECT_EQ(want.candidates.logits, got.candidates.logits) << what;
}

// Sequence 0's prefill and decode alone, then in every other company.
}  // namespace

void CheckInvariance(Backend& backend, Compared compared) {
  const uint32_t seed = TestSeed();
  Forwards f(backend, seed, compared);
  const int n = f.prompt(0);
  f.PrefillOthers();
  const Outputs prefill = f.One({0, 0, n});
  const Outputs decode = f.One({0, n, n + 1});

  ExpectSame(prefill, f.Run({{1, 0, f.prompt(1)}, {0, 0, n}})[1], "prefill beside one other");
  ExpectSame(prefill,
             f.Run({{2, 0, f.prompt(2)}, {3, 0, f.prompt(3)}, {0, 0, n}, {4, 0, f.prompt(4)}})[2],
             "prefill among three others");
  for (const std::vector<int>& cuts :
       {std::vector<int>{16}, {13}, {8, 16, 20}, {n - 2}, {n - 1}, {1, 2, 3, 4, 5, 30}}) {
    std::string what = "prefill chunked at";
    int begin = 0;
    for (int cut : cuts) {
      f.One({0, begin, cut});
      begin = cut;
      absl::StrAppend(&what, " ", cut);
    }
    ExpectSame(prefill, f.One({0, begin, n}), what);
  }
  f.One({0, 0, n});  // Sequence 0's K/V as the reference wrote them.
  for (const auto& [others, at] : std::vector<std::pair<int, int>>{
           {1, 1}, {2, 0}, {3, 2}, {7, 7}, {8, 8}, {11, 5}, {12, 0}, {12, 12}}) {
    ExpectSame(decode, f.DecodeAmong(others, at),
               absl::StrCat("decode among ", others, " others at ", at));
  }
  ExpectSame(decode, f.Run({{0, n, n + 1}, {5, 0, f.prompt(5)}})[0],
             "decode beside a prefill chunk");
}

// A search's branches: ten siblings sharing the first five blocks (80 tokens) of a 100-token
// prompt, each with 3–21 tokens of its own in blocks of its own, decode a token each in one step
// (beside the prompt's own sequence), and each gets the bits its step alone gives.
void CheckSiblings(Backend& backend, Compared compared) {
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  const int vocab = backend.config().vocab_size;
  auto random_tokens = [&](int n) {
    std::vector<int32_t> tokens(n);
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % vocab);
    return tokens;
  };
  Forwards f(backend, seed, compared);
  int32_t next_block = kSequences * kBlocksPerSequence;
  auto new_blocks = [&](int n) {
    std::vector<int32_t> blocks(n);
    for (int32_t& b : blocks) b = next_block++;
    return blocks;
  };
  const int base = f.Add(random_tokens(101), new_blocks(7));
  f.One({base, 0, f.prompt(base)});
  std::vector<int> siblings;
  for (int i = 0; i < 10; ++i) {
    std::vector<int32_t> tokens(f.tokens(base).begin(), f.tokens(base).begin() + 80);
    const std::vector<int32_t> own = random_tokens(4 + 2 * i);
    tokens.insert(tokens.end(), own.begin(), own.end());
    std::vector<int32_t> blocks(f.blocks(base).begin(), f.blocks(base).begin() + 5);
    const std::vector<int32_t> own_blocks = new_blocks(2);
    blocks.insert(blocks.end(), own_blocks.begin(), own_blocks.end());
    siblings.push_back(f.Add(std::move(tokens), std::move(blocks)));
    f.One({siblings.back(), 80, f.prompt(siblings.back())});
  }
  std::vector<Outputs> alone;
  std::vector<Part> parts = {{base, f.prompt(base), f.prompt(base) + 1}};
  for (int s : siblings) {
    alone.push_back(f.One({s, f.prompt(s), f.prompt(s) + 1}));
    parts.push_back({s, f.prompt(s), f.prompt(s) + 1});
  }
  const std::vector<Outputs> together = f.Run(parts);
  for (size_t i = 0; i < siblings.size(); ++i) {
    ExpectSame(alone[i], together[i + 1], absl::StrCat("sibling ", i, " among its siblings"));
  }
}

// Blocks for the sequences of CheckInvariance and CheckSiblings.

}  // namespace arbor::worker::testing
