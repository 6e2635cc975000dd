// JSON Schema's `format` for strings, as automata that generate only valid instances: each
// format is an anchored pattern of regex_dfa.h, a subset of the format's grammar where the whole
// grammar is not regular or not worth its states. Length limits are kept by bounding labels and
// their number, not by counting (which would multiply the states by the limit).
//
//  - date: RFC 3339 full-date, years 0001-9999, days 01-28 in February (no leap-year 29th),
//    days up to 30 or 31 by month;
//  - time: RFC 3339 full-time, seconds 00-59 (no leap second), an optional fraction, and the
//    offset RFC 3339 requires: Z or +hh:mm / -hh:mm;
//  - date-time: a date, "T", a time;
//  - duration: RFC 3339 appendix A (P, then date and time parts in order, or weeks);
//  - hostname: one to four dot-separated labels of letters, digits and single inner hyphens
//    ("--" never, so no IDNA A-label rules apply) of at most 61 characters, the last starting
//    with a letter: at most 247 characters, within RFC 1123's 253;
//  - email: a dot-atom local part (RFC 5321, no quoted strings) of at most 63 characters, "@",
//    a hostname of at most three labels: at most 249 characters, within RFC 5321's 254;
//  - ipv4: dotted decimal without leading zeros;
//  - ipv6: RFC 4291 text form with or without "::" (no embedded IPv4, no zone);
//  - uri: scheme "://" hostname, optional port, path, query and fragment of RFC 3986's
//    unreserved characters, sub-delims, ':' and '@' (no percent-encoding);
//  - uuid: RFC 4122's 8-4-4-4-12 hex digits.
// Any other format is not compiled (schema_keywords.h: the schema's strings are not generated).
#ifndef ARBOR_GRAMMAR_STRING_FORMAT_H_
#define ARBOR_GRAMMAR_STRING_FORMAT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "grammar/string_automaton.h"

namespace arbor::grammar {

// The automaton of the format `name`, or null when it is not one of the above.
const CodePointDfa* FindFormat(absl::string_view name);

// The formats FindFormat knows, sorted (for error messages and docs).
std::vector<std::string> FormatNames();

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_STRING_FORMAT_H_
