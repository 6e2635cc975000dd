// Whether a string is made only of ASCII letters and digits plus a few listed characters: the
// syntax checks of names that come from outside (tokens, worker ids, host names), which must
// stay printable, bounded and free of separators.
#ifndef ARBOR_BASE_ASCII_CLASS_H_
#define ARBOR_BASE_ASCII_CLASS_H_

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace arbor::base {

inline bool AlnumOr(absl::string_view s, absl::string_view extra) {
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        extra.find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace arbor::base

#endif  // ARBOR_BASE_ASCII_CLASS_H_
