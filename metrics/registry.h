// The set of metric families a process exports, and their rendering for a scrape.
//
// Metrics are process-global by nature (one scrape target per process), so instrumented code
// registers on DefaultRegistry() unless a test hands it a registry of its own. Registration is
// get-or-create: registering a name again with the same definition returns the same family, so
// components (one engine, one admission controller, ...) can each obtain their handles without
// sharing a registration site; a different definition for a known name is a caller bug and
// aborts (misuse.h), as do invalid names.
//
// Thread-safe: registration and rendering take the registry's lock; series updates take none.
#ifndef ARBOR_METRICS_REGISTRY_H_
#define ARBOR_METRICS_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "metrics/family.h"
#include "metrics/series.h"

namespace arbor::metrics {

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Names match [a-zA-Z_:][a-zA-Z0-9_:]*; a counter's ends in "_total". The returned family
  // lives as long as the registry.
  Family<Counter>& AddCounter(std::string name, std::string help, std::vector<Label> labels = {});
  Family<Gauge>& AddGauge(std::string name, std::string help, std::vector<Label> labels = {});
  // `upper_bounds`: finite, strictly increasing; the +Inf bucket is implied. No label "le".
  Family<Histogram>& AddHistogram(std::string name, std::string help,
                                  std::vector<double> upper_bounds, std::vector<Label> labels = {});

  // Every family, sorted by name, in the text exposition format 0.0.4 (text_format.h).
  std::string RenderText() const;

 private:
  // The family registered as `name`, if its definition is `family`'s; else registers `family`.
  FamilyBase& Register(std::unique_ptr<FamilyBase> family);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_ ABSL_GUARDED_BY(mu_);
};

// The process's registry, which /metrics serves (created on first use, never destroyed, so
// handles stay valid in threads that outlive main).
Registry& DefaultRegistry();

}  // namespace arbor::metrics

#endif  // ARBOR_METRICS_REGISTRY_H_
