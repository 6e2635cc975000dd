// The URI reference parsing and resolution of uri_reference.h.
#include "grammar/uri_reference.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"

namespace arbor::grammar {
namespace {

// §5.2.3: the reference's path appended to the base's directory.
std::string MergePaths(const UriReference& base, absl::string_view path) {
  if (base.authority.has_value() && base.path.empty()) return absl::StrCat("/", path);
  const size_t slash = base.path.rfind('/');
  if (slash == std::string::npos) return std::string(path);
  return absl::StrCat(absl::string_view(base.path).substr(0, slash + 1), path);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
}

}  // namespace

UriReference ParseUriReference(absl::string_view text) {
  UriReference uri;
  // ^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?
  const size_t scheme_end = text.find_first_of(":/?#");
  if (scheme_end != absl::string_view::npos && scheme_end > 0 && text[scheme_end] == ':') {
    uri.scheme = std::string(text.substr(0, scheme_end));
    text.remove_prefix(scheme_end + 1);
  }
  if (text.substr(0, 2) == "//") {
    text.remove_prefix(2);
    const size_t end = std::min(text.find_first_of("/?#"), text.size());
    uri.authority = std::string(text.substr(0, end));
    text.remove_prefix(end);
  }
  const size_t path_end = std::min(text.find_first_of("?#"), text.size());
  uri.path = std::string(text.substr(0, path_end));
  text.remove_prefix(path_end);
  if (!text.empty() && text[0] == '?') {
    const size_t end = std::min(text.find('#'), text.size());
    uri.query = std::string(text.substr(1, end - 1));
    text.remove_prefix(end);
  }
  if (!text.empty()) uri.fragment = std::string(text.substr(1));
  return uri;
}

std::string RecomposeUri(const UriReference& uri) {
  std::string out;
  if (uri.scheme) absl::StrAppend(&out, *uri.scheme, ":");
  if (uri.authority) absl::StrAppend(&out, "//", *uri.authority);
  out += uri.path;
  if (uri.query) absl::StrAppend(&out, "?", *uri.query);
  if (uri.fragment) absl::StrAppend(&out, "#", *uri.fragment);
  return out;
}

std::string RemoveDotSegments(absl::string_view input) {
  std::string output;
  // Drops the last segment of `output` and its preceding "/" (if any).
  auto pop = [&output] {
    const size_t slash = output.rfind('/');
    output.erase(slash == std::string::npos ? 0 : slash);
  };
  while (!input.empty()) {
    if (input.substr(0, 3) == "../") {
      input.remove_prefix(3);
    } else if (input.substr(0, 2) == "./") {
      input.remove_prefix(2);
    } else if (input.substr(0, 3) == "/./") {
      input.remove_prefix(2);
    } else if (input == "/.") {
      input = "/";
    } else if (input.substr(0, 4) == "/../") {
      input.remove_prefix(3);
      pop();
    } else if (input == "/..") {
      input = "/";
      pop();
    } else if (input == "." || input == "..") {
      input = "";
    } else {
      // The first segment, with its leading "/" if any, up to the next "/".
      const size_t next = input.find('/', 1);
      const size_t end = next == absl::string_view::npos ? input.size() : next;
      absl::StrAppend(&output, input.substr(0, end));
      input.remove_prefix(end);
    }
  }
  return output;
}

std::string ResolveUriReference(absl::string_view base_text, absl::string_view reference) {
  const UriReference base = ParseUriReference(base_text);
  const UriReference ref = ParseUriReference(reference);
  UriReference target;
  if (ref.scheme) {
    target = ref;
    target.path = RemoveDotSegments(ref.path);
  } else {
    target.scheme = base.scheme;
    if (ref.authority) {
      target.authority = ref.authority;
      target.path = RemoveDotSegments(ref.path);
      target.query = ref.query;
    } else {
      target.authority = base.authority;
      if (ref.path.empty()) {
        target.path = base.path;
        target.query = ref.query ? ref.query : base.query;
      } else {
        target.path = RemoveDotSegments(ref.path[0] == '/' ? ref.path : MergePaths(base, ref.path));
        target.query = ref.query;
      }
    }
  }
  target.fragment = ref.fragment;
  return RecomposeUri(target);
}

std::string PercentDecode(absl::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace arbor::grammar
