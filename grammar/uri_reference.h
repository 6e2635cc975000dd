// URI references as JSON Schema uses them for `$id` and `$ref` (RFC 3986): split into their five
// components, resolved against a base URI (§5.2, strict: a reference with a scheme is taken as
// absolute even when the scheme equals the base's), and put back together. Only the syntax is
// handled; nothing is normalised beyond removing dot segments, and nothing is ever fetched.
#ifndef ARBOR_GRAMMAR_URI_REFERENCE_H_
#define ARBOR_GRAMMAR_URI_REFERENCE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace arbor::grammar {

// The components of a URI reference (RFC 3986 Appendix B). An absent component differs from an
// empty one: "http://a/b?" has an empty query, "http://a/b" none.
struct UriReference {
  std::optional<std::string> scheme;
  std::optional<std::string> authority;
  std::string path;
  std::optional<std::string> query;
  std::optional<std::string> fragment;
};

// Every string parses (Appendix B's expression matches anything).
UriReference ParseUriReference(absl::string_view text);

// The text of `uri` (§5.3).
std::string RecomposeUri(const UriReference& uri);

// `path` with its "." and ".." segments removed (§5.2.4).
std::string RemoveDotSegments(absl::string_view path);

// The target URI of `reference` against `base` (§5.2.2), as text.
std::string ResolveUriReference(absl::string_view base, absl::string_view reference);

// `text` with its %XX escapes decoded (a '%' not followed by two hex digits stays as it is).
std::string PercentDecode(absl::string_view text);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_URI_REFERENCE_H_
