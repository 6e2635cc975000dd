// An OutputConstraint (entropix.proto) as the grammar library takes it, and compiled, with errors
// naming the request's field: the one check the coordinator (at submission) and the worker (per
// RunItem) both make.
#ifndef ARBOR_POLICY_CONSTRAINT_CONVERT_H_
#define ARBOR_POLICY_CONSTRAINT_CONVERT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/entropix.pb.h"
#include "grammar/constraint.h"

namespace arbor::policy {

// INVALID_ARGUMENT under `field` (e.g. "constraint") when neither kind is set or json_object is
// false. The schema is not compiled here.
absl::StatusOr<grammar::ConstraintSpec> ConstraintFromProto(const v1::OutputConstraint& proto,
                                                            absl::string_view field);

// The spec compiled, or INVALID_ARGUMENT naming `field`.json_schema and the schema's keyword.
absl::StatusOr<grammar::JsonGrammar> CompileConstraintProto(const v1::OutputConstraint& proto,
                                                            absl::string_view field);

}  // namespace arbor::policy

#endif  // ARBOR_POLICY_CONSTRAINT_CONVERT_H_
