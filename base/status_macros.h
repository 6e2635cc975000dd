// RETURN_IF_ERROR and ASSIGN_OR_RETURN: early return on error for absl::Status / StatusOr.
//
// The abseil shipped with Debian 12 (20220623) predates absl/status/status_macros.h, and error
// handling by value is the house style (docs/ARCHITECTURE.md §8), so every library uses these two.
#ifndef ARBOR_BASE_STATUS_MACROS_H_
#define ARBOR_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ARBOR_STATUS_CONCAT_INNER_(a, b) a##b
#define ARBOR_STATUS_CONCAT_(a, b) ARBOR_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) once and returns it from the caller when not OK.
#define RETURN_IF_ERROR(expr)                                                           \
  do {                                                                                  \
    if (absl::Status arbor_status_ = (expr); !arbor_status_.ok()) return arbor_status_; \
  } while (false)

// ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (an absl::StatusOr<T>); returns its status from
// the caller when not OK, else moves the value into `lhs`, which may be a declaration
// (`ASSIGN_OR_RETURN(auto x, F())`). Expands to several statements: do not use it as the body
// of an unbraced if/else.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ARBOR_ASSIGN_OR_RETURN_IMPL_(ARBOR_STATUS_CONCAT_(arbor_statusor_, __LINE__), lhs, expr)

#define ARBOR_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)  \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // ARBOR_BASE_STATUS_MACROS_H_
