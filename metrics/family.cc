#include "metrics/family.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "metrics/misuse.h"

namespace arbor::metrics {
namespace {

// Bounds the series of one family: every combination of label values is allocated up front.
constexpr size_t kMaxSeriesPerFamily = 4096;

bool IsLabelName(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(name[0]) || name.substr(0, 2) == "__") return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

}  // namespace

FamilyBase::FamilyBase(std::string name, std::string help, absl::string_view type,
                       std::vector<Label> labels, absl::string_view extra_definition)
    : name_(std::move(name)), help_(std::move(help)), type_(type), labels_(std::move(labels)) {
  for (size_t i = 0; i < labels_.size(); ++i) {
    Label& label = labels_[i];
    if (!IsLabelName(label.name)) {
      internal::Misuse(absl::StrCat(name_, ": '", label.name, "' is not a label name"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels_[j].name == label.name) {
        internal::Misuse(absl::StrCat(name_, ": label '", label.name, "' given twice"));
      }
    }
    if (label.values.empty()) {
      internal::Misuse(absl::StrCat(name_, ": label '", label.name, "' declares no values"));
    }
    if (std::find(label.values.begin(), label.values.end(), kOtherLabelValue) ==
        label.values.end()) {
      label.values.push_back(kOtherLabelValue);
    }
    absl::flat_hash_map<std::string, size_t>& index = value_index_.emplace_back();
    for (size_t v = 0; v < label.values.size(); ++v) {
      if (!index.emplace(label.values[v], v).second) {
        internal::Misuse(absl::StrCat(name_, ": label '", label.name, "' declares '",
                                      label.values[v], "' twice"));
      }
    }
  }
  // The last label varies fastest, so series render grouped by the first label's values.
  strides_.assign(labels_.size(), 1);
  for (size_t i = labels_.size(); i-- > 0;) {
    strides_[i] = series_count_;
    series_count_ *= labels_[i].values.size();
    if (series_count_ > kMaxSeriesPerFamily) {
      internal::Misuse(absl::StrCat(name_, ": more than ", kMaxSeriesPerFamily,
                                    " combinations of label values"));
    }
  }
  exported_.reset(new std::atomic<bool>[series_count_]);
  for (size_t i = 0; i < series_count_; ++i) exported_[i].store(labels_.empty());

  definition_ = absl::StrCat(type_, " \"", help_, "\" ", extra_definition);
  for (const Label& label : labels_) {
    absl::StrAppend(&definition_, " ", label.name, "=[", absl::StrJoin(label.values, ","), "]");
  }
}

size_t FamilyBase::IndexOf(absl::Span<const absl::string_view> values) {
  if (values.size() != labels_.size()) {
    internal::Misuse(
        absl::StrCat(name_, ": ", values.size(), " label values for ", labels_.size(), " labels"));
  }
  size_t index = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const auto it = value_index_[i].find(values[i]);
    const size_t value =
        it != value_index_[i].end() ? it->second : value_index_[i].at(kOtherLabelValue);
    index += value * strides_[i];
  }
  // Tested first: after the first use this is a read of a cache line nobody writes.
  if (!exported_[index].load(std::memory_order_relaxed)) {
    exported_[index].store(true, std::memory_order_relaxed);
  }
  return index;
}

void FamilyBase::Render(std::string& out) const {
  AppendHeader(name_, help_, type_, out);
  LabelPairs pairs(labels_.size());
  for (size_t index = 0; index < series_count_; ++index) {
    if (!exported_[index].load(std::memory_order_relaxed)) continue;
    for (size_t i = 0; i < labels_.size(); ++i) {
      pairs[i] = {labels_[i].name,
                  labels_[i].values[(index / strides_[i]) % labels_[i].values.size()]};
    }
    RenderSeries(index, pairs, out);
  }
}

void RenderSeries(const Counter& counter, absl::string_view name, const LabelPairs& labels,
                  std::string& out) {
  AppendSample(name, labels, counter.Value(), out);
}

void RenderSeries(const Gauge& gauge, absl::string_view name, const LabelPairs& labels,
                  std::string& out) {
  AppendSample(name, labels, gauge.Value(), out);
}

void RenderSeries(const Histogram& histogram, absl::string_view name, const LabelPairs& labels,
                  std::string& out) {
  const Histogram::Snapshot snapshot = histogram.Read();
  const std::string bucket = absl::StrCat(name, "_bucket");
  LabelPairs with_le = labels;
  with_le.emplace_back("le", "");
  const std::vector<double>& bounds = histogram.upper_bounds();
  for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
    const std::string le = i < bounds.size() ? FormatValue(bounds[i]) : "+Inf";
    with_le.back().second = le;
    AppendSample(bucket, with_le, static_cast<double>(snapshot.cumulative[i]), out);
  }
  AppendSample(absl::StrCat(name, "_sum"), labels, snapshot.sum, out);
  AppendSample(absl::StrCat(name, "_count"), labels, static_cast<double>(snapshot.count()), out);
}

}  // namespace arbor::metrics
