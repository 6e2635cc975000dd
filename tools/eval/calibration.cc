#include "tools/eval/calibration.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace arbor::tools::eval {
namespace {

constexpr size_t kMinSteps = 100;

const std::map<std::string, double>& DefaultQuantiles() {
  static const auto* defaults = new std::map<std::string, double>{
      {"lelv_entropy", 0.25},    {"lelv_varentropy", 0.25}, {"helv_entropy", 0.95},
      {"helv_varentropy", 0.50}, {"lehv_entropy", 0.95},    {"lehv_varentropy", 0.95},
      {"hehv_entropy", 0.90},    {"hehv_varentropy", 0.95}, {"calm_entropy", 0.50},
      {"calm_varentropy", 0.50}, {"fork_entropy", 0.90}};
  return *defaults;
}

}  // namespace

void MetricSamples::Add(const arbor::v1::Metrics& m) {
  entropy.push_back(m.entropy());
  varentropy.push_back(m.varentropy());
  attn_entropy.push_back(m.attn_entropy());
  attn_varentropy.push_back(m.attn_varentropy());
  agreement.push_back(m.agreement());
  interaction_strength.push_back(m.interaction_strength());
}

std::map<std::string, const std::vector<double>*> MetricSamples::ByName() const {
  return {{"entropy", &entropy},           {"varentropy", &varentropy},
          {"attn_entropy", &attn_entropy}, {"attn_varentropy", &attn_varentropy},
          {"agreement", &agreement},       {"interaction_strength", &interaction_strength}};
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, values.size() - 1);
  std::nth_element(values.begin(), values.begin() + below, values.end());
  const double low = values[below];
  // The next order statistic is the smallest value after the `below` first ones.
  const double high =
      above == below ? low : *std::min_element(values.begin() + below + 1, values.end());
  return low + (position - static_cast<double>(below)) * (high - low);
}

absl::StatusOr<std::map<std::string, double>> CalibrationQuantiles(const std::string& overrides) {
  std::map<std::string, double> quantiles = DefaultQuantiles();
  for (absl::string_view entry : absl::StrSplit(overrides, ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    double q = 0;
    if (!quantiles.contains(kv.first)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--quantiles: '", kv.first,
          "' is not a threshold (lelv_entropy, lelv_varentropy, "
          "helv_entropy, helv_varentropy, lehv_entropy, lehv_varentropy, hehv_entropy, "
          "hehv_varentropy, calm_entropy, calm_varentropy, fork_entropy)"));
    }
    if (!absl::SimpleAtod(kv.second, &q) || q < 0 || q > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--quantiles: ", kv.first, ": '", kv.second, "' is not in [0, 1]"));
    }
    quantiles[kv.first] = q;
  }
  return quantiles;
}

absl::StatusOr<arbor::v1::PolicyConfig> CalibratedPolicy(
    const MetricSamples& samples, const std::map<std::string, double>& quantiles) {
  if (samples.size() < kMinSteps) {
    return absl::FailedPreconditionError(
        absl::StrCat("only ", samples.size(), " steps collected; calibration needs at least ",
                     kMinSteps, " (give more tasks or text, or a larger --max_tokens)"));
  }
  auto h = [&](const char* key) {
    return static_cast<float>(Quantile(samples.entropy, quantiles.at(key)));
  };
  auto v = [&](const char* key) {
    return static_cast<float>(Quantile(samples.varentropy, quantiles.at(key)));
  };
  arbor::v1::PolicyConfig policy;
  arbor::v1::Thresholds* t = policy.mutable_thresholds();
  t->set_lelv_entropy(h("lelv_entropy"));
  t->set_lelv_varentropy(v("lelv_varentropy"));
  t->set_helv_entropy(h("helv_entropy"));
  t->set_helv_varentropy(v("helv_varentropy"));
  t->set_lehv_entropy(h("lehv_entropy"));
  t->set_lehv_varentropy(v("lehv_varentropy"));
  t->set_hehv_entropy(h("hehv_entropy"));
  t->set_hehv_varentropy(v("hehv_varentropy"));
  policy.mutable_branch()->set_calm_entropy(h("calm_entropy"));
  policy.mutable_branch()->set_calm_varentropy(v("calm_varentropy"));
  policy.mutable_trace()->set_fork_entropy(h("fork_entropy"));
  return policy;
}

std::string QuantileTable(const MetricSamples& samples) {
  static constexpr double kShown[] = {0.05, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99};
  std::string out = absl::StrFormat("%-22s", absl::StrCat(samples.size(), " steps"));
  for (double q : kShown) absl::StrAppendFormat(&out, " %8s", absl::StrCat("q", q * 100));
  out += "\n";
  for (const auto& [name, values] : samples.ByName()) {
    absl::StrAppendFormat(&out, "%-22s", name);
    for (double q : kShown) absl::StrAppendFormat(&out, " %8.4f", Quantile(*values, q));
    out += "\n";
  }
  return out;
}

}  // namespace arbor::tools::eval
