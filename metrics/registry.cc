#include "metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "metrics/misuse.h"

namespace arbor::metrics {
namespace {

bool IsMetricName(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_' || c == ':'; });
}

void CheckName(const std::string& name) {
  if (!IsMetricName(name)) internal::Misuse(absl::StrCat("'", name, "' is not a metric name"));
}

}  // namespace

Family<Counter>& Registry::AddCounter(std::string name, std::string help,
                                      std::vector<Label> labels) {
  CheckName(name);
  if (!absl::EndsWith(name, "_total")) {
    internal::Misuse(absl::StrCat("counter '", name, "' must end in _total"));
  }
  return static_cast<Family<Counter>&>(Register(std::make_unique<Family<Counter>>(
      std::move(name), std::move(help), "counter", std::move(labels), "")));
}

Family<Gauge>& Registry::AddGauge(std::string name, std::string help, std::vector<Label> labels) {
  CheckName(name);
  return static_cast<Family<Gauge>&>(Register(std::make_unique<Family<Gauge>>(
      std::move(name), std::move(help), "gauge", std::move(labels), "")));
}

Family<Histogram>& Registry::AddHistogram(std::string name, std::string help,
                                          std::vector<double> upper_bounds,
                                          std::vector<Label> labels) {
  CheckName(name);
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i]) || (i > 0 && upper_bounds[i] <= upper_bounds[i - 1])) {
      internal::Misuse(
          absl::StrCat(name, ": bucket bounds must be finite and strictly increasing"));
    }
  }
  for (const Label& label : labels) {
    if (label.name == "le") internal::Misuse(absl::StrCat(name, ": 'le' names the buckets"));
  }
  const std::string buckets =
      absl::StrCat("le=[",
                   absl::StrJoin(upper_bounds, ",",
                                 [](std::string* out, double b) { out->append(FormatValue(b)); }),
                   "]");
  auto bounds = std::make_shared<const std::vector<double>>(std::move(upper_bounds));
  return static_cast<Family<Histogram>&>(Register(std::make_unique<Family<Histogram>>(
      std::move(name), std::move(help), "histogram", std::move(labels), buckets, bounds)));
}

FamilyBase& Registry::Register(std::unique_ptr<FamilyBase> family) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = families_.try_emplace(family->name(), nullptr);
  if (inserted) {
    it->second = std::move(family);
  } else if (it->second->definition() != family->definition()) {
    internal::Misuse(absl::StrCat("'", family->name(), "' registered as ", it->second->definition(),
                                  " and again as ", family->definition()));
  }
  return *it->second;
}

std::string Registry::RenderText() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) family->Render(out);
  return out;
}

Registry& DefaultRegistry() {
  static Registry* const registry = new Registry();
  return *registry;
}

}  // namespace arbor::metrics
