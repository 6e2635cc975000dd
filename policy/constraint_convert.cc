#include "policy/constraint_convert.h"

#include "absl/strings/str_cat.h"

namespace arbor::policy {

absl::StatusOr<grammar::ConstraintSpec> ConstraintFromProto(const v1::OutputConstraint& proto,
                                                            absl::string_view field) {
  grammar::ConstraintSpec spec;
  switch (proto.kind_case()) {
    case v1::OutputConstraint::kJsonObject:
      if (!proto.json_object()) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".json_object: must be true if set"));
      }
      spec.json_object = true;
      return spec;
    case v1::OutputConstraint::kJsonSchema:
      spec.json_schema = proto.json_schema();
      return spec;
    case v1::OutputConstraint::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": set json_object or json_schema"));
}

absl::StatusOr<grammar::JsonGrammar> CompileConstraintProto(const v1::OutputConstraint& proto,
                                                            absl::string_view field) {
  absl::StatusOr<grammar::ConstraintSpec> spec = ConstraintFromProto(proto, field);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<grammar::JsonGrammar> grammar = grammar::CompileConstraint(*spec);
  if (!grammar.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".json_schema: ", grammar.status().message()));
  }
  return grammar;
}

}  // namespace arbor::policy
