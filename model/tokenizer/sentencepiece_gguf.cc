#include "model/tokenizer/sentencepiece_gguf.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/tokenizer/utf8.h"

namespace arbor::model {
namespace {

using nlohmann::json;

// SentencePiece's word-boundary mark, U+2581.
constexpr char kSpaceMark[] = "\xE2\x96\x81";
constexpr int64_t kUnknownType = 2;  // llama.cpp's LLAMA_TOKEN_TYPE_UNKNOWN.

// A merge and what ranks it: the joined piece's score (higher first), then, as Hugging Face's
// converter orders equal scores, the joined piece's id and the halves' ids.
struct Merge {
  double score;
  int joined, left, right;
};

// Every split of every piece into two pieces, best first.
std::vector<std::string> Merges(const std::vector<std::string>& tokens,
                                const std::vector<double>& scores) {
  std::unordered_map<std::string, int> ids;
  for (size_t id = 0; id < tokens.size(); ++id) ids.emplace(tokens[id], static_cast<int>(id));
  std::vector<Merge> merges;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& piece = tokens[id];
    // Split between characters (a piece of invalid UTF-8 splits between bytes).
    for (size_t at = ReadUtf8Prefix(piece).length; at > 0 && at < piece.size();
         at += ReadUtf8Prefix(absl::string_view(piece).substr(at)).length) {
      auto left = ids.find(piece.substr(0, at));
      auto right = ids.find(piece.substr(at));
      if (left == ids.end() || right == ids.end()) continue;
      merges.push_back({scores[id], static_cast<int>(id), left->second, right->second});
    }
  }
  std::sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    return std::tie(b.score, a.joined, a.left, a.right) <
           std::tie(a.score, b.joined, b.left, b.right);
  });
  std::vector<std::string> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) out.push_back(absl::StrCat(tokens[m.left], " ", tokens[m.right]));
  return out;
}

}  // namespace

absl::StatusOr<json> SentencePieceTokenizerJson(const GgufFile& file,
                                                const std::vector<std::string>& tokens,
                                                const std::vector<int64_t>& types) {
  ASSIGN_OR_RETURN(const std::vector<double> scores, file.GetFloats("tokenizer.ggml.scores"));
  if (scores.size() != tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat(file.path(), ": GGUF tokenizer.ggml.scores has ",
                                                   scores.size(), " entries for ", tokens.size(),
                                                   " tokens"));
  }
  json unk = nullptr;
  const absl::StatusOr<int64_t> unk_id = file.GetInt("tokenizer.ggml.unknown_token_id");
  if (unk_id.ok() && *unk_id >= 0 && *unk_id < static_cast<int64_t>(tokens.size())) {
    unk = tokens[*unk_id];
  } else {
    for (size_t id = 0; id < types.size(); ++id) {
      if (types[id] == kUnknownType) {
        unk = tokens[id];
        break;
      }
    }
  }
  // llama.cpp puts a space before the text (and after every special token) unless told not to.
  const bool space_prefix = file.GetBool("tokenizer.ggml.add_space_prefix").value_or(true);
  json normalizers = json::array();
  if (space_prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", kSpaceMark}});
  normalizers.push_back(
      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpaceMark}});
  json decoders =
      json::array({{{"type", "Replace"}, {"pattern", {{"String", kSpaceMark}}}, {"content", " "}},
                   {{"type", "ByteFallback"}},
                   {{"type", "Fuse"}}});
  if (space_prefix) {
    decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  }
  json vocab = json::object();
  for (size_t id = 0; id < tokens.size(); ++id) {
    // A repeated string keeps its first id, as in the byte-level vocabularies.
    if (!vocab.contains(tokens[id])) vocab[tokens[id]] = id;
  }
  json out;
  out["normalizer"] = {{"type", "Sequence"}, {"normalizers", std::move(normalizers)}};
  out["pre_tokenizer"] = nullptr;
  out["model"] = {
      {"type", "BPE"},         {"unk_token", unk},          {"fuse_unk", true},
      {"byte_fallback", true}, {"vocab", std::move(vocab)}, {"merges", Merges(tokens, scores)}};
  out["decoder"] = {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
  return out;
}

}  // namespace arbor::model
