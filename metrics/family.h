// A metric family: one name, help text and type, and one series per combination of its label
// values. Label names AND the values each label may take are fixed at registration, so the
// number of series a process can ever export is known up front (Prometheus stores one time
// series per combination; an unbounded label — a job id, a prompt — would grow it forever).
// Values come from enums or fixed sets (gRPC code names, strategies, finish reasons). A value
// outside the declared set is folded into the value "other" rather than creating a series, so a
// mistake costs one extra series, never an unbounded number.
//
// Every series is created with the family, so WithLabels is a lookup in small fixed maps and no
// allocation; callers on a hot path keep the returned reference (it lives as long as the
// registry) and update it directly. A labelled series is exported once a handle to it has been
// taken, an unlabelled one always.
#ifndef ARBOR_METRICS_FAMILY_H_
#define ARBOR_METRICS_FAMILY_H_

#include <atomic>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "metrics/series.h"
#include "metrics/text_format.h"

namespace arbor::metrics {

// Where a label value outside the declared set goes.
inline constexpr char kOtherLabelValue[] = "other";

// A label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__") and every value it may take.
struct Label {
  std::string name;
  std::vector<std::string> values;  // Non-empty, distinct; "other" is added when missing.
};

// What families of every type share: identity, label bookkeeping, rendering.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  // Type, help, labels and buckets, spelled out: two registrations of one name must agree.
  const std::string& definition() const { return definition_; }
  // "# HELP", "# TYPE", then the exported series in declaration order of the label values.
  void Render(std::string& out) const;

 protected:
  FamilyBase(std::string name, std::string help, absl::string_view type, std::vector<Label> labels,
             absl::string_view extra_definition);

  size_t series_count() const { return series_count_; }
  // The series of `values` (one per label, in label order), marked as exported.
  size_t IndexOf(absl::Span<const absl::string_view> values);
  virtual void RenderSeries(size_t index, const LabelPairs& labels, std::string& out) const = 0;

 private:
  const std::string name_;
  const std::string help_;
  const absl::string_view type_;
  std::vector<Label> labels_;  // With "other" last among each label's values.
  std::vector<absl::flat_hash_map<std::string, size_t>> value_index_;  // Per label.
  std::vector<size_t> strides_;  // Series index = sum of value index * stride.
  size_t series_count_ = 1;
  std::unique_ptr<std::atomic<bool>[]> exported_;
  std::string definition_;
};

// Appends one series' sample lines.
void RenderSeries(const Counter& counter, absl::string_view name, const LabelPairs& labels,
                  std::string& out);
void RenderSeries(const Gauge& gauge, absl::string_view name, const LabelPairs& labels,
                  std::string& out);
void RenderSeries(const Histogram& histogram, absl::string_view name, const LabelPairs& labels,
                  std::string& out);

template <typename T>
class Family final : public FamilyBase {
 public:
  // `args` construct each series (a Histogram's bucket bounds). Registry::Add* call this.
  template <typename... Args>
  Family(std::string name, std::string help, absl::string_view type, std::vector<Label> labels,
         absl::string_view extra_definition, const Args&... args)
      : FamilyBase(std::move(name), std::move(help), type, std::move(labels), extra_definition) {
    series_.reserve(series_count());
    for (size_t i = 0; i < series_count(); ++i) series_.push_back(std::make_unique<T>(args...));
  }

  // One value per label, in the order the labels were registered; aborts on a count mismatch.
  T& WithLabels(absl::Span<const absl::string_view> values) { return *series_[IndexOf(values)]; }
  T& WithLabels(std::initializer_list<absl::string_view> values) {
    return WithLabels(absl::MakeConstSpan(values.begin(), values.size()));
  }
  // The series of a family without labels.
  T& Get() { return WithLabels({}); }

 private:
  void RenderSeries(size_t index, const LabelPairs& labels, std::string& out) const override {
    metrics::RenderSeries(*series_[index], name(), labels, out);
  }

  std::vector<std::unique_ptr<T>> series_;
};

}  // namespace arbor::metrics

#endif  // ARBOR_METRICS_FAMILY_H_
