// SqlRow's typed accessors.
#include "coordinator/store/sql_database.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace arbor::coordinator {

absl::StatusOr<int64_t> SqlRow::Int(size_t column) const {
  if (column >= cells_.size()) return absl::InternalError(absl::StrCat("no column ", column));
  if (std::holds_alternative<std::monostate>(cells_[column])) return 0;
  if (const int64_t* value = std::get_if<int64_t>(&cells_[column])) return *value;
  return absl::InternalError(absl::StrCat("column ", column, " holds bytes, not an integer"));
}

absl::StatusOr<std::string> SqlRow::Bytes(size_t column) const {
  if (column >= cells_.size()) return absl::InternalError(absl::StrCat("no column ", column));
  if (std::holds_alternative<std::monostate>(cells_[column])) return std::string();
  if (const std::string* value = std::get_if<std::string>(&cells_[column])) return *value;
  return absl::InternalError(absl::StrCat("column ", column, " holds an integer, not bytes"));
}

}  // namespace arbor::coordinator
