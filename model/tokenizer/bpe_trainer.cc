#include "model/tokenizer/bpe_trainer.h"

#include <algorithm>
#include <cstdint>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/tokenizer/byte_level.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "nlohmann/json.hpp"

namespace arbor::model {
namespace {

using nlohmann::json;

constexpr int kMaxVocabSize = 1 << 20;
constexpr absl::string_view kBeginOfText = "<|begin_of_text|>";

uint64_t PairKey(int left, int right) {
  return static_cast<uint64_t>(left) << 32 | static_cast<uint32_t>(right);
}

struct Word {
  std::vector<int> symbols;
  int64_t count;
};

// Pair statistics over all distinct words, updated incrementally as merges rewrite words.
class PairCounts {
 public:
  explicit PairCounts(std::vector<Word>* words) : words_(words) {
    for (size_t w = 0; w < words_->size(); ++w) Add(w, +1);
    for (const auto& [key, count] : counts_) heap_.push({count, key});
  }

  // The most frequent pair still present (smallest key on ties); false when none is left.
  bool PopBest(uint64_t* key) {
    while (!heap_.empty()) {
      const Entry top = heap_.top();
      heap_.pop();
      auto it = counts_.find(top.key);
      // Entries are pushed whenever a count changes; only the one matching the count is live.
      if (it != counts_.end() && it->second == top.count && top.count > 0) {
        *key = top.key;
        return true;
      }
    }
    return false;
  }

  // Rewrites every word containing the pair as `merged` and refreshes the counts.
  void Merge(uint64_t key, int merged) {
    const int left = static_cast<int>(key >> 32);
    const int right = static_cast<int>(key & 0xFFFFFFFF);
    std::vector<int> affected = std::move(where_[key]);
    where_.erase(key);
    std::sort(affected.begin(), affected.end());
    affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
    touched_.clear();
    for (int w : affected) {
      std::vector<int>& symbols = (*words_)[w].symbols;
      Add(w, -1);
      std::vector<int> rewritten;
      rewritten.reserve(symbols.size());
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
          rewritten.push_back(merged);
          ++i;
        } else {
          rewritten.push_back(symbols[i]);
        }
      }
      symbols = std::move(rewritten);
      Add(w, +1);
    }
    for (uint64_t changed : touched_) {
      auto it = counts_.find(changed);
      if (it == counts_.end()) continue;
      if (it->second <= 0) {
        counts_.erase(it);
      } else {
        heap_.push({it->second, changed});
      }
    }
  }

 private:
  struct Entry {
    int64_t count;
    uint64_t key;
    bool operator<(const Entry& o) const {
      return count != o.count ? count < o.count : key > o.key;
    }
  };

  void Add(size_t w, int sign) {
    const Word& word = (*words_)[w];
    for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      const uint64_t key = PairKey(word.symbols[i], word.symbols[i + 1]);
      counts_[key] += sign * word.count;
      touched_.insert(key);
      if (sign > 0) where_[key].push_back(static_cast<int>(w));
    }
  }

  std::vector<Word>* words_;
  absl::flat_hash_map<uint64_t, int64_t> counts_;
  absl::flat_hash_map<uint64_t, std::vector<int>> where_;
  absl::flat_hash_set<uint64_t> touched_;
  std::priority_queue<Entry> heap_;
};

json Llama3PreTokenizerJson() {
  return {
      {"type", "Sequence"},
      {"pretokenizers", json::array({{{"type", "Split"},
                                      {"pattern", {{"Regex", std::string(kLlama3SplitPattern)}}},
                                      {"behavior", "Isolated"},
                                      {"invert", false}},
                                     {{"type", "ByteLevel"},
                                      {"add_prefix_space", false},
                                      {"trim_offsets", true},
                                      {"use_regex", false}}})}};
}

json PostProcessorJson(const std::vector<std::string>& specials, int first_special_id) {
  json byte_level = {{"type", "ByteLevel"},
                     {"add_prefix_space", true},
                     {"trim_offsets", false},
                     {"use_regex", true}};
  auto bos = std::find(specials.begin(), specials.end(), kBeginOfText);
  if (bos == specials.end()) return byte_level;
  const int bos_id = first_special_id + static_cast<int>(bos - specials.begin());
  auto special = [](int type_id) {
    return json{{"SpecialToken", {{"id", std::string(kBeginOfText)}, {"type_id", type_id}}}};
  };
  auto sequence = [](const char* name, int type_id) {
    return json{{"Sequence", {{"id", name}, {"type_id", type_id}}}};
  };
  json templating = {
      {"type", "TemplateProcessing"},
      {"single", json::array({special(0), sequence("A", 0)})},
      {"pair", json::array({special(0), sequence("A", 0), special(1), sequence("B", 1)})},
      {"special_tokens",
       {{std::string(kBeginOfText),
         {{"id", std::string(kBeginOfText)},
          {"ids", json::array({bos_id})},
          {"tokens", json::array({std::string(kBeginOfText)})}}}}}};
  return {{"type", "Sequence"}, {"processors", json::array({byte_level, templating})}};
}

absl::Status CheckTrainerOptions(const BpeTrainerOptions& options) {
  const int num_specials = static_cast<int>(options.special_tokens.size());
  if (options.vocab_size < 256 + num_specials || options.vocab_size > kMaxVocabSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("BpeTrainerOptions.vocab_size = ", options.vocab_size, " must be in [",
                     256 + num_specials, " (256 bytes + specials), ", kMaxVocabSize, "]"));
  }
  absl::flat_hash_set<std::string> seen;
  for (const std::string& special : options.special_tokens) {
    if (special.empty() || !seen.insert(special).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("BpeTrainerOptions.special_tokens: '", special, "' is empty or repeated"));
    }
  }
  return absl::OkStatus();
}

// Distinct pre-tokenized words with their counts, as byte symbols (ids 0..255 are the bytes).
std::vector<Word> CountWords(absl::string_view corpus) {
  absl::flat_hash_map<std::string, int64_t> word_counts;
  PreTokenizer::Llama3().Split(corpus,
                               [&](absl::string_view word) { ++word_counts[std::string(word)]; });
  std::vector<std::pair<std::string, int64_t>> sorted(word_counts.begin(), word_counts.end());
  std::sort(sorted.begin(), sorted.end());  // Deterministic whatever the hash order.
  std::vector<Word> words;
  words.reserve(sorted.size());
  for (const auto& [text, count] : sorted) {
    Word word{{}, count};
    for (char c : text) word.symbols.push_back(static_cast<unsigned char>(c));
    words.push_back(std::move(word));
  }
  return words;
}

// The learned vocabulary (byte-level text by id) and its merges, in order.
struct LearnedBpe {
  std::vector<std::string> tokens;
  json merges = json::array();
};

// Merges the most frequent pair until the vocabulary holds `bpe_size` tokens or no pair is left.
LearnedBpe LearnMerges(std::vector<Word> words, int bpe_size) {
  LearnedBpe bpe;
  absl::flat_hash_map<std::string, int> token_ids;
  for (int b = 0; b < 256; ++b) {
    bpe.tokens.emplace_back(ByteLevelChar(b));
    token_ids[bpe.tokens.back()] = b;
  }
  PairCounts pairs(&words);
  uint64_t best;
  while (static_cast<int>(bpe.tokens.size()) < bpe_size && pairs.PopBest(&best)) {
    const int left = static_cast<int>(best >> 32);
    const int right = static_cast<int>(best & 0xFFFFFFFF);
    bpe.merges.push_back(json::array({bpe.tokens[left], bpe.tokens[right]}));
    // Different pairs can spell the same token ("ab"+"c", "a"+"bc"): they share its id.
    std::string merged = bpe.tokens[left] + bpe.tokens[right];
    auto [it, inserted] = token_ids.try_emplace(merged, static_cast<int>(bpe.tokens.size()));
    if (inserted) bpe.tokens.push_back(std::move(merged));
    pairs.Merge(best, it->second);
  }
  return bpe;
}

// tokenizer.json of `bpe` with `specials` added after its tokens.
json TokenizerJson(const LearnedBpe& bpe, const std::vector<std::string>& specials) {
  json vocab = json::object();
  for (size_t id = 0; id < bpe.tokens.size(); ++id) vocab[bpe.tokens[id]] = id;
  const int first_special_id = static_cast<int>(bpe.tokens.size());
  json added = json::array();
  for (size_t i = 0; i < specials.size(); ++i) {
    added.push_back({{"id", first_special_id + static_cast<int>(i)},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", Llama3PreTokenizerJson()},
          {"post_processor", PostProcessorJson(specials, first_special_id)},
          {"decoder",
           {{"type", "ByteLevel"},
            {"add_prefix_space", true},
            {"trim_offsets", true},
            {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", true},
            {"vocab", vocab},
            {"merges", bpe.merges}}}};
}

}  // namespace

absl::StatusOr<std::string> TrainByteLevelBpe(absl::string_view corpus,
                                              const BpeTrainerOptions& options) {
  RETURN_IF_ERROR(CheckTrainerOptions(options));
  const int bpe_size = options.vocab_size - static_cast<int>(options.special_tokens.size());
  const json tokenizer =
      TokenizerJson(LearnMerges(CountWords(corpus), bpe_size), options.special_tokens);
  // Special tokens given by the caller may hold invalid UTF-8; replace rather than throw.
  return tokenizer.dump(1, ' ', false, json::error_handler_t::replace);
}

std::vector<std::string> Llama3SpecialTokens() {
  return {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
          "<|eot_id|>",        "<|eom_id|>",      "<|python_tag|>"};
}

}  // namespace arbor::model
