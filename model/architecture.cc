#include "model/architecture.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace arbor::model {
namespace {

template <typename Names>
const ArchitectureInfo* FindBy(absl::string_view name, Names ArchitectureInfo::*names) {
  if (name.empty()) return nullptr;
  for (const ArchitectureInfo& info : kArchitectures) {
    for (absl::string_view known : info.*names) {
      if (known == name) return &info;
    }
  }
  return nullptr;
}

template <typename Names>
std::string Every(Names ArchitectureInfo::*names) {
  std::vector<absl::string_view> all;
  for (const ArchitectureInfo& info : kArchitectures) {
    for (absl::string_view known : info.*names) {
      if (!known.empty()) all.push_back(known);
    }
  }
  return absl::StrJoin(all, ", ");
}

}  // namespace

const ArchitectureInfo* FindByGgufName(absl::string_view name) {
  for (const ArchitectureInfo& info : kArchitectures) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const ArchitectureInfo* FindByHfClass(absl::string_view name) {
  return FindBy(name, &ArchitectureInfo::hf_classes);
}

const ArchitectureInfo* FindByModelType(absl::string_view name) {
  return FindBy(name, &ArchitectureInfo::model_types);
}

std::string ServedArchitectures() {
  std::vector<std::string> parts;
  for (const ArchitectureInfo& info : kArchitectures) {
    parts.push_back(absl::StrCat(parts.empty() ? "the '" : "'", info.name,
                                 parts.empty() ? "' architecture (" : "' (", info.examples, ")"));
  }
  const std::string last = parts.back();
  parts.pop_back();
  return parts.empty() ? last : absl::StrCat(absl::StrJoin(parts, ", "), " and ", last);
}

std::string ServedHfClasses() { return Every(&ArchitectureInfo::hf_classes); }

std::string ServedModelTypes() { return Every(&ArchitectureInfo::model_types); }

}  // namespace arbor::model
