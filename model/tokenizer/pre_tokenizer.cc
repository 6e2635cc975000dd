#include "model/tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/tokenizer/json_options.h"
#include "model/tokenizer/utf8.h"

namespace arbor::model {
namespace {

using nlohmann::json;

// GPT-2's pre-tokenizer regex, used by ByteLevel when "use_regex" is true.
constexpr absl::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Per-thread match state: match data cannot be shared between concurrent matches, and a JIT
// stack larger than the default keeps long runs (megabytes of spaces) from failing.
struct MatchState {
  pcre2_match_data* data;
  pcre2_match_context* context;
  pcre2_jit_stack* stack;
  MatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchState& ThreadMatchState() {
  thread_local MatchState state;
  return state;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RegexSplit>> RegexSplit::Create(absl::string_view pattern,
                                                               bool literal, SplitBehavior behavior,
                                                               bool invert) {
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  if (literal) options |= PCRE2_LITERAL;
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return absl::InvalidArgumentError(absl::StrCat("pre-tokenizer regex '", pattern,
                                                   "' does not compile at offset ", error_offset,
                                                   ": ", reinterpret_cast<char*>(message)));
  }
  // JIT is an optimisation only: without it (e.g. unsupported CPU) matching still works.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::unique_ptr<RegexSplit>(new RegexSplit(code, behavior, invert));
}

RegexSplit::~RegexSplit() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void RegexSplit::Split(absl::string_view text,
                       absl::FunctionRef<void(absl::string_view)> piece) const {
  MatchState& state = ThreadMatchState();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // With invert, the pattern describes the pieces to keep and the gaps are the delimiters.
  const bool keep_matches = behavior_ == SplitBehavior::kIsolated || invert_;
  const bool keep_gaps = behavior_ == SplitBehavior::kIsolated || !invert_;
  size_t pos = 0;
  size_t gap_start = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(static_cast<pcre2_code*>(code_), subject, text.size(), pos, 0,
                               state.data, state.context);
    // No match, or a resource limit on a pathological input: the rest is one gap.
    if (rc < 0) break;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t start = ovector[0];
    const size_t end = ovector[1];
    if (end <= start) {  // Empty matches cut nothing; step over one character.
      pos = start + ReadUtf8Prefix(text.substr(start)).length;
      continue;
    }
    if (start > gap_start && keep_gaps) piece(text.substr(gap_start, start - gap_start));
    if (keep_matches) piece(text.substr(start, end - start));
    pos = gap_start = end;
  }
  if (gap_start < text.size() && keep_gaps) piece(text.substr(gap_start));
}

absl::StatusOr<PreTokenizer> PreTokenizer::FromJson(const json& json) {
  PreTokenizer pre_tokenizer;
  if (!json.is_null()) RETURN_IF_ERROR(pre_tokenizer.AddJsonStage(json, "pre_tokenizer"));
  return pre_tokenizer;
}

PreTokenizer PreTokenizer::Llama3() {
  PreTokenizer pre_tokenizer;
  // The built-in pattern is known to compile.
  pre_tokenizer.stages_.push_back(
      {*RegexSplit::Create(kLlama3SplitPattern, false, SplitBehavior::kIsolated, false)});
  pre_tokenizer.byte_level_ = true;
  return pre_tokenizer;
}

absl::Status PreTokenizer::AddJsonStage(const json& stage, const std::string& where) {
  if (!stage.is_object() || !stage.contains("type") || !stage["type"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " must be an object with a \"type\""));
  }
  const std::string type = stage["type"].get<std::string>();
  if (byte_level_) {
    return UnsupportedTokenizer(
        absl::StrCat(where, " of type '", type, "' after a ByteLevel stage"));
  }
  if (type == "Sequence") {
    if (!stage.contains("pretokenizers") || !stage["pretokenizers"].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".pretokenizers must be an array"));
    }
    for (size_t i = 0; i < stage["pretokenizers"].size(); ++i) {
      RETURN_IF_ERROR(
          AddJsonStage(stage["pretokenizers"][i], absl::StrCat(where, ".pretokenizers[", i, "]")));
    }
    return absl::OkStatus();
  }
  if (type == "Split") {
    const json* pattern = stage.contains("pattern") ? &stage["pattern"] : nullptr;
    std::string text;
    bool literal = false;
    if (pattern != nullptr && pattern->is_object() && pattern->contains("Regex") &&
        (*pattern)["Regex"].is_string()) {
      text = (*pattern)["Regex"].get<std::string>();
    } else if (pattern != nullptr && pattern->is_object() && pattern->contains("String") &&
               (*pattern)["String"].is_string()) {
      text = (*pattern)["String"].get<std::string>();
      literal = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".pattern must be {\"Regex\": string} or {\"String\": string}"));
    }
    const std::string behavior = stage.contains("behavior") && stage["behavior"].is_string()
                                     ? stage["behavior"].get<std::string>()
                                     : "";
    SplitBehavior split_behavior;
    if (behavior == "Isolated") {
      split_behavior = SplitBehavior::kIsolated;
    } else if (behavior == "Removed") {
      split_behavior = SplitBehavior::kRemoved;
    } else {
      return UnsupportedTokenizer(absl::StrCat(where, ".behavior '", behavior, "'"));
    }
    ASSIGN_OR_RETURN(bool invert, OptionalBool(stage, "invert", false, where));
    ASSIGN_OR_RETURN(auto split, RegexSplit::Create(text, literal, split_behavior, invert));
    stages_.push_back({std::move(split)});
    return absl::OkStatus();
  }
  if (type == "Digits") {
    ASSIGN_OR_RETURN(bool individual, OptionalBool(stage, "individual_digits", false, where));
    ASSIGN_OR_RETURN(auto split, RegexSplit::Create(individual ? R"(\p{N})" : R"(\p{N}+)", false,
                                                    SplitBehavior::kIsolated, false));
    stages_.push_back({std::move(split)});
    return absl::OkStatus();
  }
  if (type == "ByteLevel") {
    ASSIGN_OR_RETURN(bool prefix_space, OptionalBool(stage, "add_prefix_space", true, where));
    ASSIGN_OR_RETURN(bool use_regex, OptionalBool(stage, "use_regex", true, where));
    if (prefix_space) stages_.push_back({nullptr});
    if (use_regex) {
      ASSIGN_OR_RETURN(auto split, RegexSplit::Create(kGpt2SplitPattern, false,
                                                      SplitBehavior::kIsolated, false));
      stages_.push_back({std::move(split)});
    }
    byte_level_ = true;
    return absl::OkStatus();
  }
  return UnsupportedTokenizer(absl::StrCat(where, " of type '", type, "'"));
}

void PreTokenizer::Split(absl::string_view text,
                         absl::FunctionRef<void(absl::string_view)> word) const {
  SplitFrom(0, text, word);
}

void PreTokenizer::SplitFrom(size_t stage, absl::string_view text,
                             absl::FunctionRef<void(absl::string_view)> word) const {
  if (stage == stages_.size()) {
    word(text);
    return;
  }
  const Stage& current = stages_[stage];
  if (current.split == nullptr) {
    // ByteLevel's add_prefix_space: every piece starts with a space.
    if (!text.empty() && text[0] == ' ') {
      SplitFrom(stage + 1, text, word);
    } else {
      const std::string prefixed = absl::StrCat(" ", text);
      SplitFrom(stage + 1, prefixed, word);
    }
    return;
  }
  current.split->Split(text, [&](absl::string_view piece) { SplitFrom(stage + 1, piece, word); });
}

}  // namespace arbor::model
