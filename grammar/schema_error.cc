// The error messages and pointers of schema_error.h.
#include "grammar/schema_error.h"

#include "absl/strings/str_cat.h"

namespace arbor::grammar {

absl::Status SchemaError(absl::string_view pointer, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("at ", pointer.empty() ? "the schema's root" : pointer, ": ", what));
}

std::string ChildPointer(absl::string_view pointer, absl::string_view key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return absl::StrCat(pointer, "/", escaped);
}

}  // namespace arbor::grammar
