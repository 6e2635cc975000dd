#include "model/tokenizer/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <queue>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "model/tokenizer/byte_level.h"
#include "model/tokenizer/json_options.h"
#include "model/tokenizer/utf8.h"

namespace arbor::model {
namespace {

using nlohmann::json;

// A decoder "Strip" step that removes at most the one leading space a Metaspace/SentencePiece
// encoder added: content " ", stop 0, start 0 or 1 (json comparisons, which never throw on a
// field of another type).
bool IsLeadingSpaceStrip(const json& step) {
  const auto field_is = [&step](const char* key, const json& fallback, const json& value) {
    return (step.contains(key) ? step[key] : fallback) == value;
  };
  return field_is("content", "", " ") && field_is("stop", 0, 0) &&
         (field_is("start", 0, 0) || field_is("start", 0, 1));
}

// Bounds that keep a hostile tokenizer.json from asking for absurd allocations.
constexpr int kMaxTokenId = 1 << 22;
// The word cache is dropped when its entries take more than this (adversarial or endless
// text). Measured: prompts of fresh words grew the coordinator by ~7-12 MB per 1,000
// jobs until a 2^18-word limit (~20-35 MB) was reached; real text repeats its words, so a few
// MB hold the words that matter.
constexpr size_t kMaxCacheBytes = 4 << 20;
// What one entry costs beyond its bytes and ids: the hash slot, the vector and string headers,
// the ids' allocation.
constexpr size_t kCacheEntryOverhead = 96;

// An option that must be absent, null or empty for this implementation.
absl::Status RequireEmptyString(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return absl::OkStatus();
  if (it->is_string() && it->get<std::string>().empty()) return absl::OkStatus();
  return UnsupportedTokenizer(absl::StrCat(where, ".", key, " (only null is supported)"));
}

absl::StatusOr<int> TokenIdField(const json& value, const std::string& where) {
  if (!value.is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " must be an integer token id"));
  }
  const int64_t id = value.get<int64_t>();
  if (id < 0 || id >= kMaxTokenId) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " = ", id, " is outside [0, ", kMaxTokenId, ")"));
  }
  return static_cast<int>(id);
}

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// single_word tokens must not touch a word character (ASCII alphanumerics, '_', or any
// non-ASCII byte, which in practice is part of a letter).
bool IsWordByte(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isalnum(u) || c == '_';
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open tokenizer file ", path));
  std::stringstream contents;
  contents << file.rdbuf();
  auto tokenizer = FromJson(contents.str());
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat(path, ": ", tokenizer.status().message()));
  }
  return tokenizer;
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(absl::string_view text) {
  const json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("tokenizer.json is not valid JSON");
  if (!root.is_object()) return absl::InvalidArgumentError("tokenizer.json must be an object");
  if (!root.contains("model") || !root["model"].is_object()) {
    return absl::InvalidArgumentError("tokenizer.json has no \"model\" object");
  }
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  const json null_value;
  auto field = [&](const char* key) -> const json& {
    return root.contains(key) ? root[key] : null_value;
  };
  ASSIGN_OR_RETURN(tokenizer->normalizer_, Normalizer::FromJson(field("normalizer")));
  ASSIGN_OR_RETURN(tokenizer->pre_tokenizer_, PreTokenizer::FromJson(field("pre_tokenizer")));
  RETURN_IF_ERROR(tokenizer->LoadModel(root["model"]));
  RETURN_IF_ERROR(tokenizer->LoadAddedTokens(field("added_tokens")));
  RETURN_IF_ERROR(tokenizer->LoadDecoder(field("decoder")));
  RETURN_IF_ERROR(tokenizer->LoadPostProcessor(field("post_processor")));
  return tokenizer;
}

absl::Status Tokenizer::SetToken(int id, const std::string& text, const std::string& where) {
  if (id >= static_cast<int>(token_text_.size())) {
    token_text_.resize(id + 1);
    special_.resize(id + 1, false);
  }
  if (!token_text_[id].empty() && token_text_[id] != text) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": id ", id, " is both '", token_text_[id], "' and '", text, "'"));
  }
  token_text_[id] = text;
  return absl::OkStatus();
}

absl::Status Tokenizer::LoadModel(const json& model) {
  if (model.contains("type") && !(model["type"].is_string() && model["type"] == "BPE")) {
    return UnsupportedTokenizer(absl::StrCat("model.type ", model["type"].dump(), " (only BPE)"));
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return absl::InvalidArgumentError("model.vocab must be an object of token → id");
  }
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      !(model["dropout"].is_number() && model["dropout"].get<double>() == 0.0)) {
    return UnsupportedTokenizer("model.dropout (BPE dropout makes encoding random)");
  }
  RETURN_IF_ERROR(RequireEmptyString(model, "continuing_subword_prefix", "model"));
  RETURN_IF_ERROR(RequireEmptyString(model, "end_of_word_suffix", "model"));
  ASSIGN_OR_RETURN(ignore_merges_, OptionalBool(model, "ignore_merges", false, "model"));
  ASSIGN_OR_RETURN(byte_fallback_, OptionalBool(model, "byte_fallback", false, "model"));
  ASSIGN_OR_RETURN(fuse_unk_, OptionalBool(model, "fuse_unk", false, "model"));
  RETURN_IF_ERROR(LoadVocab(model));
  RETURN_IF_ERROR(FindByteSymbols());
  if (!model.contains("merges") || !model["merges"].is_array()) {
    return absl::InvalidArgumentError("model.merges must be an array");
  }
  return LoadMerges(model["merges"]);
}

absl::Status Tokenizer::LoadVocab(const json& model) {
  vocab_.reserve(model["vocab"].size());
  for (const auto& [token, value] : model["vocab"].items()) {
    const std::string where = absl::StrCat("model.vocab[\"", token, "\"]");
    ASSIGN_OR_RETURN(int id, TokenIdField(value, where));
    RETURN_IF_ERROR(SetToken(id, token, where));
    vocab_[token] = id;
  }
  if (model.contains("unk_token") && !model["unk_token"].is_null()) {
    if (!model["unk_token"].is_string()) {
      return absl::InvalidArgumentError("model.unk_token must be a string or null");
    }
    auto it = vocab_.find(model["unk_token"].get<std::string>());
    if (it == vocab_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model.unk_token '", model["unk_token"].get<std::string>(), "' is not in the vocab"));
    }
    unk_id_ = it->second;
  }
  return absl::OkStatus();
}

absl::Status Tokenizer::FindByteSymbols() {
  // Single-byte symbols: the byte-level alphabet, or the <0xXX> tokens of byte_fallback. A
  // byte-level vocabulary may lack a few control bytes (SmolLM2 lacks 0x00-0x08 and more): such
  // a byte stays a -1 symbol that no merge crosses and that Encode drops, as llama.cpp does.
  byte_symbol_.fill(-1);
  if (!pre_tokenizer_.byte_level() && !byte_fallback_) return absl::OkStatus();
  for (int b = 0; b < 256; ++b) {
    const std::string symbol = pre_tokenizer_.byte_level() ? std::string(ByteLevelChar(b))
                                                           : absl::StrFormat("<0x%02X>", b);
    auto it = vocab_.find(symbol);
    if (it == vocab_.end() && pre_tokenizer_.byte_level()) continue;
    if (it == vocab_.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("model.vocab lacks the token '%s' for byte 0x%02X", symbol, b));
    }
    byte_symbol_[b] = it->second;
  }
  return absl::OkStatus();
}

namespace {

// A merge's two tokens, from the legacy "left right" (exactly one space, as the tokenizers
// library requires) or ["left", "right"].
absl::StatusOr<std::pair<std::string, std::string>> MergePair(const json& merge,
                                                              const std::string& where) {
  if (merge.is_string()) {
    const std::string line = merge.get<std::string>();
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " = '", line, "' is not two tokens separated by one space"));
    }
    return std::pair{line.substr(0, space), line.substr(space + 1)};
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
    return std::pair{merge[0].get<std::string>(), merge[1].get<std::string>()};
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, " must be \"left right\" or [\"left\", \"right\"]"));
}

}  // namespace

absl::Status Tokenizer::LoadMerges(const json& merges) {
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string where = absl::StrCat("model.merges[", rank, "]");
    ASSIGN_OR_RETURN(const auto pair, MergePair(merges[rank], where));
    const auto& [left, right] = pair;
    auto left_it = vocab_.find(left);
    auto right_it = vocab_.find(right);
    auto merged_it = vocab_.find(left + right);
    for (const auto& [it, name] : {std::pair{left_it, left}, std::pair{right_it, right},
                                   std::pair{merged_it, left + right}}) {
      if (it == vocab_.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": token '", name, "' is not in model.vocab"));
      }
    }
    const uint64_t key =
        static_cast<uint64_t>(left_it->second) << 32 | static_cast<uint32_t>(right_it->second);
    // Like the tokenizers library, a repeated pair takes its last rank.
    merges_[key] = Merge{static_cast<int>(rank), merged_it->second};
  }
  return absl::OkStatus();
}

absl::Status Tokenizer::LoadAddedTokens(const json& added_tokens) {
  if (added_tokens.is_null()) return absl::OkStatus();
  if (!added_tokens.is_array()) return absl::InvalidArgumentError("added_tokens must be an array");
  for (size_t i = 0; i < added_tokens.size(); ++i) {
    const std::string where = absl::StrCat("added_tokens[", i, "]");
    const json& entry = added_tokens[i];
    if (!entry.is_object() || !entry.contains("id") || !entry.contains("content") ||
        !entry["content"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " must be an object with \"id\" and a string \"content\""));
    }
    AddedToken token;
    ASSIGN_OR_RETURN(token.id, TokenIdField(entry["id"], where + ".id"));
    token.content = entry["content"].get<std::string>();
    if (token.content.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".content is empty"));
    }
    ASSIGN_OR_RETURN(token.special, OptionalBool(entry, "special", false, where));
    ASSIGN_OR_RETURN(token.lstrip, OptionalBool(entry, "lstrip", false, where));
    ASSIGN_OR_RETURN(token.rstrip, OptionalBool(entry, "rstrip", false, where));
    ASSIGN_OR_RETURN(token.single_word, OptionalBool(entry, "single_word", false, where));
    RETURN_IF_ERROR(SetToken(token.id, token.content, where));
    special_[token.id] = token.special;
    added_.push_back(std::move(token));
  }
  for (size_t i = 0; i < added_.size(); ++i) {
    added_by_first_byte_[static_cast<unsigned char>(added_[i].content[0])].push_back(i);
  }
  for (auto& candidates : added_by_first_byte_) {
    std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      return added_[a].content.size() > added_[b].content.size();
    });
  }
  return absl::OkStatus();
}

absl::Status Tokenizer::LoadDecoder(const json& decoder) {
  // The decoder is folded into per-token bytes: every supported decoder step acts on tokens one
  // at a time, except Llama 2's final strip of one leading space.
  bool byte_level = false;
  bool byte_fallback = false;
  std::vector<std::pair<std::string, std::string>> replacements;
  std::vector<const json*> steps;
  if (decoder.is_null()) {
    return UnsupportedTokenizer(
        "decoder is null (the tokenizers library would join tokens with spaces)");
  }
  if (!decoder.is_object() || !decoder.contains("type") || !decoder["type"].is_string()) {
    return absl::InvalidArgumentError("decoder must be an object with a \"type\"");
  }
  if (decoder["type"] == "Sequence") {
    if (!decoder.contains("decoders") || !decoder["decoders"].is_array()) {
      return absl::InvalidArgumentError("decoder.decoders must be an array");
    }
    for (const json& step : decoder["decoders"]) steps.push_back(&step);
  } else {
    steps.push_back(&decoder);
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const json& step = *steps[i];
    const std::string where = absl::StrCat("decoder step ", i);
    if (!step.is_object() || !step.contains("type") || !step["type"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " must have a string \"type\""));
    }
    const std::string type = step["type"].get<std::string>();
    if (type == "ByteLevel") {
      byte_level = true;
    } else if (type == "ByteFallback") {
      byte_fallback = true;
    } else if (type == "Fuse") {
      // Concatenation, which per-token bytes already are.
    } else if (type == "Replace" && step.contains("pattern") && step["pattern"].is_object() &&
               step["pattern"].contains("String") && step["pattern"]["String"].is_string() &&
               step.contains("content") && step["content"].is_string() &&
               !step["pattern"]["String"].get<std::string>().empty()) {
      replacements.emplace_back(step["pattern"]["String"].get<std::string>(),
                                step["content"].get<std::string>());
    } else if (type == "Strip" && IsLeadingSpaceStrip(step) && i + 1 == steps.size()) {
      strip_leading_space_ = step.contains("start") && step["start"] == 1;
    } else {
      return UnsupportedTokenizer(absl::StrCat("decoder step of type '", type, "'"));
    }
  }
  token_bytes_.resize(token_text_.size());
  for (size_t id = 0; id < token_text_.size(); ++id) {
    const std::string& text = token_text_[id];
    std::string bytes = text;
    if (byte_level) {
      // As in the tokenizers library, a token with a character outside the byte-level alphabet
      // (e.g. an added token holding a space) decodes to its own text.
      if (auto from = FromByteLevel(text)) bytes = *std::move(from);
    }
    if (byte_fallback && text.size() == 6 && absl::StartsWith(text, "<0x") && text[5] == '>') {
      unsigned int value = 0;
      if (std::sscanf(text.c_str() + 3, "%2X", &value) == 1) bytes = std::string(1, value);
    }
    for (const auto& [from, to] : replacements) bytes = absl::StrReplaceAll(bytes, {{from, to}});
    token_bytes_[id] = std::move(bytes);
  }
  return absl::OkStatus();
}

absl::Status Tokenizer::LoadPostProcessor(const json& post_processor) {
  if (post_processor.is_null()) return absl::OkStatus();
  if (!post_processor.is_object() || !post_processor.contains("type")) {
    return absl::InvalidArgumentError("post_processor must be an object with a \"type\"");
  }
  if (post_processor["type"] == "Sequence") {
    if (!post_processor.contains("processors") || !post_processor["processors"].is_array()) {
      return absl::InvalidArgumentError("post_processor.processors must be an array");
    }
    for (const json& processor : post_processor["processors"]) {
      RETURN_IF_ERROR(LoadPostProcessor(processor));
    }
    return absl::OkStatus();
  }
  if (post_processor["type"] != "TemplateProcessing") return absl::OkStatus();
  if (!post_processor.contains("single") || !post_processor["single"].is_array()) {
    return absl::InvalidArgumentError("post_processor.single must be an array");
  }
  // The special tokens before the sequence itself ("$A") form the prefix, e.g. BOS.
  for (const json& piece : post_processor["single"]) {
    if (!piece.is_object() || !piece.contains("SpecialToken")) break;
    const json& special = piece["SpecialToken"];
    if (!special.is_object() || !special.contains("id") || !special["id"].is_string()) {
      return absl::InvalidArgumentError("post_processor.single SpecialToken must have an id");
    }
    auto id = TokenId(special["id"].get<std::string>());
    if (!id.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("post_processor names the unknown token '",
                                                     special["id"].get<std::string>(), "'"));
    }
    prefix_tokens_.push_back(*id);
  }
  return absl::OkStatus();
}

bool Tokenizer::FindAddedToken(absl::string_view text, size_t from, bool parse_special,
                               AddedMatch* match) const {
  if (added_.empty()) return false;
  for (size_t i = from; i < text.size(); ++i) {
    const auto& candidates = added_by_first_byte_[static_cast<unsigned char>(text[i])];
    for (int index : candidates) {
      const AddedToken& token = added_[index];
      if (token.special && !parse_special) continue;
      if (!absl::StartsWith(text.substr(i), token.content)) continue;
      size_t begin = i;
      size_t end = i + token.content.size();
      if (token.single_word && ((begin > 0 && IsWordByte(text[begin - 1])) ||
                                (end < text.size() && IsWordByte(text[end])))) {
        continue;
      }
      if (token.lstrip) {
        while (begin > from && IsAsciiSpace(text[begin - 1])) --begin;
      }
      if (token.rstrip) {
        while (end < text.size() && IsAsciiSpace(text[end])) ++end;
      }
      *match = AddedMatch{begin, end, token.id};
      return true;
    }
  }
  return false;
}

std::vector<int> Tokenizer::Encode(absl::string_view text, bool parse_special) const {
  std::vector<int> ids;
  ids.reserve(text.size() / 3 + 1);
  size_t segment_start = 0;
  AddedMatch match;
  while (FindAddedToken(text, segment_start, parse_special, &match)) {
    EncodeSegment(text.substr(segment_start, match.begin - segment_start), &ids);
    ids.push_back(match.id);
    segment_start = match.end;
  }
  EncodeSegment(text.substr(segment_start), &ids);
  return ids;
}

void Tokenizer::EncodeSegment(absl::string_view segment, std::vector<int>* ids) const {
  if (segment.empty()) return;
  auto encode_word = [&](absl::string_view word) { EncodeWord(word, ids); };
  if (normalizer_.empty()) {
    pre_tokenizer_.Split(segment, encode_word);
  } else {
    pre_tokenizer_.Split(normalizer_.Apply(segment), encode_word);
  }
}

void Tokenizer::EncodeWord(absl::string_view word, std::vector<int>* ids) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids->size();
  MergeWord(word, ids);
  const size_t entry_bytes =
      word.size() + (ids->size() - first) * sizeof(int) + kCacheEntryOverhead;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_bytes_ + entry_bytes > kMaxCacheBytes) {
    cache_ = {};  // Not clear(): that keeps the slot array allocated.
    cache_bytes_ = 0;
  }
  if (cache_.emplace(word, std::vector<int>(ids->begin() + first, ids->end())).second) {
    cache_bytes_ += entry_bytes;
  }
}

void Tokenizer::InitialSymbols(absl::string_view word, std::vector<int>* symbols) const {
  if (pre_tokenizer_.byte_level()) {
    for (char c : word) symbols->push_back(byte_symbol_[static_cast<unsigned char>(c)]);
    return;
  }
  // One symbol per character; characters outside the vocabulary become their bytes
  // (byte_fallback) or the unknown token.
  bool previous_unknown = false;
  while (!word.empty()) {
    const size_t length = ReadUtf8Prefix(word).length;
    auto it = vocab_.find(word.substr(0, length));
    if (it != vocab_.end()) {
      symbols->push_back(it->second);
      previous_unknown = false;
    } else if (byte_fallback_) {
      for (size_t i = 0; i < length; ++i) {
        symbols->push_back(byte_symbol_[static_cast<unsigned char>(word[i])]);
      }
    } else if (unk_id_ >= 0 && !(fuse_unk_ && previous_unknown)) {
      symbols->push_back(unk_id_);
      previous_unknown = true;
    }
    word.remove_prefix(length);
  }
}

void Tokenizer::MergeWord(absl::string_view word, std::vector<int>* ids) const {
  if (ignore_merges_) {
    // A word that is itself a token is taken whole, whatever the merges would build.
    std::string key;
    if (pre_tokenizer_.byte_level()) {
      AppendByteLevel(word, &key);
    } else {
      key.assign(word.data(), word.size());
    }
    auto it = vocab_.find(key);
    if (it != vocab_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  std::vector<int> symbol_ids;
  symbol_ids.reserve(word.size());
  InitialSymbols(word, &symbol_ids);
  const int n = static_cast<int>(symbol_ids.size());
  auto emit = [ids](int id) {
    if (id >= 0) ids->push_back(id);  // -1: a byte the vocabulary lacks.
  };
  if (n <= 1) {
    for (int id : symbol_ids) emit(id);
    return;
  }
  // Symbols form a linked list; a min-heap of candidate merges (rank, then leftmost position)
  // applies the lowest-rank merge first in O(n log n). Entries made stale by an earlier merge
  // are recognised because a position's id changes whenever it takes part in a merge.
  std::vector<int> next(n), prev(n);
  for (int i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  struct Candidate {
    int rank;
    int pos;
    int left;
    int right;
    int merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push_pair = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    const int left = symbol_ids[pos];
    const int right = symbol_ids[next[pos]];
    auto it = merges_.find(static_cast<uint64_t>(left) << 32 | static_cast<uint32_t>(right));
    if (it != merges_.end()) heap.push({it->second.rank, pos, left, right, it->second.id});
  };
  for (int i = 0; i + 1 < n; ++i) push_pair(i);
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.pos] || symbol_ids[c.pos] != c.left) continue;
    const int right = next[c.pos];
    if (right < 0 || symbol_ids[right] != c.right) continue;
    symbol_ids[c.pos] = c.merged;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push_pair(prev[c.pos]);
    push_pair(c.pos);
  }
  for (int i = 0; i >= 0; i = next[i]) emit(symbol_ids[i]);
}

std::string Tokenizer::Decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) {
    if (id >= 0 && id < vocab_size()) out.append(token_bytes_[id]);
  }
  if (strip_leading_space_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

absl::StatusOr<int> Tokenizer::TokenId(absl::string_view token) const {
  auto it = vocab_.find(token);
  if (it != vocab_.end()) return it->second;
  for (const AddedToken& added : added_) {
    if (added.content == token) return added.id;
  }
  return absl::NotFoundError(absl::StrCat("token '", token, "' is not in the vocabulary"));
}

std::string Tokenizer::TokenText(int id) const {
  return id >= 0 && id < vocab_size() ? token_text_[id] : std::string();
}

absl::string_view Tokenizer::TokenBytes(int id) const {
  return id >= 0 && id < vocab_size() ? absl::string_view(token_bytes_[id]) : absl::string_view();
}

bool Tokenizer::IsSpecial(int id) const { return id >= 0 && id < vocab_size() && special_[id]; }

}  // namespace arbor::model
