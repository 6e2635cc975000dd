// The format automata of string_format.h, compiled once from their patterns.
#include "grammar/string_format.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grammar/regex_dfa.h"

namespace arbor::grammar {
namespace {

// Pieces of the formats' patterns.
constexpr char kYear[] = "(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])";
constexpr char kMonthDay[] =
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|"
    "02-(?:0[1-9]|1[0-9]|2[0-8]))";
constexpr char kTime[] =
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?"
    "(?:Z|[+\\-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
constexpr char kDurationDate[] = "(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)";
constexpr char kDurationTime[] = "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)";
// A label of 1 to 61 characters, no hyphen first, last or twice in a row.
constexpr char kLabelRest[] = "(?:-?[a-zA-Z0-9]){0,30}";
constexpr char kOctet[] = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
constexpr char kHex[] = "[0-9a-fA-F]{1,4}";
// RFC 3986 pchar without percent-encoding.
constexpr char kPathChar[] = "[A-Za-z0-9\\-._~!$&'()*+,;=:@]";

// `labels` - 1 labels and a dot each, then a last label that starts with a letter.
std::string Hostname(int labels) {
  return absl::StrCat("(?:[a-zA-Z0-9]", kLabelRest, "\\.){0,", labels - 1, "}[a-zA-Z]", kLabelRest);
}

std::string Ipv6() {
  const std::string h = kHex;
  const std::string forms[] = {absl::StrCat("(?:", h, ":){7}", h),
                               absl::StrCat("(?:", h, ":){1,7}:"),
                               absl::StrCat("(?:", h, ":){1,6}:", h),
                               absl::StrCat("(?:", h, ":){1,5}(?::", h, "){1,2}"),
                               absl::StrCat("(?:", h, ":){1,4}(?::", h, "){1,3}"),
                               absl::StrCat("(?:", h, ":){1,3}(?::", h, "){1,4}"),
                               absl::StrCat("(?:", h, ":){1,2}(?::", h, "){1,5}"),
                               absl::StrCat(h, ":(?::", h, "){1,6}"),
                               absl::StrCat(":(?:(?::", h, "){1,7}|:)")};
  return absl::StrJoin(forms, "|");
}

// Each format's pattern, without the anchors.
std::map<std::string, std::string> Patterns() {
  const std::string date = absl::StrCat(kYear, "-", kMonthDay);
  const std::string query = absl::StrCat("(?:", kPathChar, "|[/?])*");
  return {
      {"date", date},
      {"time", kTime},
      {"date-time", absl::StrCat(date, "T", kTime)},
      {"duration", absl::StrCat("P(?:", kDurationDate, "(?:", kDurationTime, ")?|", kDurationTime,
                                "|[0-9]+W)")},
      {"email", absl::StrCat("[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-](?:\\.?[A-Za-z0-9!#$%&'*+/=?^_`{|}~"
                             "\\-]){0,31}@",
                             Hostname(3))},
      {"hostname", Hostname(4)},
      {"ipv4", absl::StrCat(kOctet, "(?:\\.", kOctet, "){3}")},
      {"ipv6", Ipv6()},
      {"uri", absl::StrCat("[a-zA-Z][a-zA-Z0-9+.\\-]*://", Hostname(4), "(?::[0-9]{1,5})?(?:/",
                           kPathChar, "*)*(?:\\?", query, ")?(?:#", query, ")?")},
      {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
  };
}

const std::map<std::string, CodePointDfa>& Formats() {
  static const auto* const kFormats = [] {
    auto* formats = new std::map<std::string, CodePointDfa>;
    for (const auto& [name, pattern] : Patterns()) {
      // The patterns are this file's constants, within the compiler's subset and limits (the
      // tests compile every one): value() cannot fail.
      (*formats)[name] = CompileRegex(absl::StrCat("^(?:", pattern, ")$")).value();
    }
    return formats;
  }();
  return *kFormats;
}

}  // namespace

const CodePointDfa* FindFormat(absl::string_view name) {
  auto it = Formats().find(std::string(name));
  return it == Formats().end() ? nullptr : &it->second;
}

std::vector<std::string> FormatNames() {
  std::vector<std::string> names;
  for (const auto& [name, unused] : Formats()) names.push_back(name);
  return names;
}

}  // namespace arbor::grammar
