#include "model/tokenizer/normalizer.h"

#include <unicode/normalizer2.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "model/tokenizer/utf8.h"

namespace arbor::model {

using nlohmann::json;

namespace {

// Hugging Face `tokenizers` normalises with old tables (its Rust crate's): it leaves alone the
// characters assigned since (U+32FF, U+A7F2–U+A7F4, U+AB69, U+10780–U+107BA, …), which ICU's
// current tables decompose, and gives the combining marks of Unicode 10.0 and 11.0 (U+1DF9,
// U+07FD, U+10F46, …) class 0, so that they stop the canonical reordering of the marks around
// them, which ICU's tables would reorder. Arbor's forms are filtered to Unicode 9.0's characters,
// so text normalises and encodes as there. Built once; frozen, so shared across threads.
const icu::UnicodeSet* HuggingFaceCharacters() {
  static const icu::UnicodeSet* set = [] {
    UErrorCode status = U_ZERO_ERROR;
    auto* characters = new icu::UnicodeSet(icu::UnicodeString(u"[:age=9.0:]"), status);
    if (U_FAILURE(status)) {
      delete characters;
      return static_cast<icu::UnicodeSet*>(nullptr);
    }
    characters->freeze();
    return characters;
  }();
  return set;
}

// `form` restricted to HuggingFaceCharacters(); null when either is missing.
const icu::Normalizer2* AsHuggingFace(const icu::Normalizer2* form, UErrorCode status) {
  const icu::UnicodeSet* characters = HuggingFaceCharacters();
  if (U_FAILURE(status) || form == nullptr || characters == nullptr) return nullptr;
  return new icu::FilteredNormalizer2(*form, *characters);
}

// The normal form tokenizer.json names `type` (NFC, NFD, NFKC or NFKD), as Hugging Face
// computes it; built once, shared, thread-safe; null for any other name, or when ICU lacks its
// data.
const icu::Normalizer2* UnicodeForm(absl::string_view type) {
  UErrorCode status = U_ZERO_ERROR;
  if (type == "NFC") {
    static const icu::Normalizer2* nfc =
        AsHuggingFace(icu::Normalizer2::getNFCInstance(status), status);
    return nfc;
  }
  if (type == "NFD") {
    static const icu::Normalizer2* nfd =
        AsHuggingFace(icu::Normalizer2::getNFDInstance(status), status);
    return nfd;
  }
  if (type == "NFKC") {
    static const icu::Normalizer2* nfkc =
        AsHuggingFace(icu::Normalizer2::getNFKCInstance(status), status);
    return nfkc;
  }
  if (type == "NFKD") {
    static const icu::Normalizer2* nfkd =
        AsHuggingFace(icu::Normalizer2::getNFKDInstance(status), status);
    return nfkd;
  }
  return nullptr;
}

// `text` in a Unicode normal form. Text that is not valid UTF-8 (a Python str never is, so the
// reference never sees it) is left as it is rather than have ICU replace its bytes.
std::string Normalize(const icu::Normalizer2* form, std::string text) {
  if (form == nullptr || !IsValidUtf8(text)) return text;
  const icu::UnicodeString wide = icu::UnicodeString::fromUTF8(icu::StringPiece(text));
  UErrorCode status = U_ZERO_ERROR;
  if (form->isNormalized(wide, status) && U_SUCCESS(status)) return text;
  status = U_ZERO_ERROR;
  const icu::UnicodeString normal = form->normalize(wide, status);
  if (U_FAILURE(status)) return text;
  std::string out;
  normal.toUTF8String(out);
  return out;
}

}  // namespace

absl::StatusOr<Normalizer> Normalizer::FromJson(const json& json) {
  Normalizer normalizer;
  if (!json.is_null()) RETURN_IF_ERROR(normalizer.AddStep(json, "normalizer"));
  return normalizer;
}

absl::Status Normalizer::AddStep(const json& step, const std::string& where) {
  if (!step.is_object() || !step.contains("type") || !step["type"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " must be an object with a \"type\""));
  }
  const std::string type = step["type"].get<std::string>();
  if (type == "Sequence") {
    if (!step.contains("normalizers") || !step["normalizers"].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".normalizers must be an array"));
    }
    for (size_t i = 0; i < step["normalizers"].size(); ++i) {
      RETURN_IF_ERROR(
          AddStep(step["normalizers"][i], absl::StrCat(where, ".normalizers[", i, "]")));
    }
    return absl::OkStatus();
  }
  if (type == "Prepend") {
    if (!step.contains("prepend") || !step["prepend"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".prepend must be a string"));
    }
    steps_.push_back({Step::Kind::kPrepend, "", step["prepend"].get<std::string>()});
    return absl::OkStatus();
  }
  if (type == "Replace") {
    const bool literal = step.contains("pattern") && step["pattern"].is_object() &&
                         step["pattern"].contains("String") &&
                         step["pattern"]["String"].is_string();
    if (!literal) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported tokenizer: ", where, ".pattern (only {\"String\": ...} is supported)"));
    }
    if (!step.contains("content") || !step["content"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".content must be a string"));
    }
    const std::string pattern = step["pattern"]["String"].get<std::string>();
    if (pattern.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".pattern must not be empty"));
    }
    steps_.push_back({Step::Kind::kReplace, pattern, step["content"].get<std::string>()});
    return absl::OkStatus();
  }
  if (UnicodeForm(type) != nullptr) {
    steps_.push_back({Step::Kind::kUnicodeForm, type, ""});
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported tokenizer: ", where, " of type '", type, "'"));
}

std::string Normalizer::Apply(absl::string_view text) const {
  std::string out(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kPrepend:
        if (!out.empty()) out.insert(0, step.content);
        break;
      case Step::Kind::kReplace:
        out = absl::StrReplaceAll(out, {{step.pattern, step.content}});
        break;
      case Step::Kind::kUnicodeForm:
        out = Normalize(UnicodeForm(step.pattern), std::move(out));
        break;
    }
  }
  return out;
}

}  // namespace arbor::model
