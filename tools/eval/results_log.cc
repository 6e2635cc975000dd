#include "tools/eval/results_log.h"

#include <cstdio>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace arbor::tools::eval {
namespace {

using nlohmann::json;

json ToJson(const Outcome& o) {
  return {{"item", o.item},
          {"strategy", o.strategy},
          {"seed", o.seed},
          {"family", o.family},
          {"level", o.level},
          {"output", o.output},
          {"extracted", o.extracted},
          {"correct", o.correct},
          {"generated_tokens", o.generated_tokens},
          {"explored_tokens", o.explored_tokens},
          {"wall_s", o.wall_s},
          {"samples", o.samples}};
}

bool FromJson(const json& j, Outcome& o) {
  try {
    o.item = j.at("item").get<std::string>();
    o.strategy = j.at("strategy").get<std::string>();
    o.seed = j.at("seed").get<uint64_t>();
    o.family = j.at("family").get<std::string>();
    o.level = j.at("level").get<int>();
    o.output = j.at("output").get<std::string>();
    o.extracted = j.at("extracted").get<std::string>();
    o.correct = j.at("correct").get<bool>();
    o.generated_tokens = j.at("generated_tokens").get<int64_t>();
    o.explored_tokens = j.at("explored_tokens").get<int64_t>();
    o.wall_s = j.at("wall_s").get<double>();
    o.samples = j.at("samples").get<int>();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

}  // namespace

std::string Outcome::Key() const { return absl::StrCat(item, "\x1f", strategy, "\x1f", seed); }

absl::StatusOr<std::unique_ptr<ResultsLog>> ResultsLog::Open(const std::string& path) {
  std::vector<Outcome> outcomes;
  std::string kept;  // The whole lines that parsed, as read.
  bool torn = false;
  {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (size_t n = 0; n < lines.size(); ++n) {
      if (lines[n].empty()) continue;
      const json j = json::parse(lines[n], nullptr, /*allow_exceptions=*/false);
      Outcome outcome;
      if (!j.is_discarded() && FromJson(j, outcome)) {
        outcomes.push_back(std::move(outcome));
        absl::StrAppend(&kept, lines[n], "\n");
      } else if (n + 1 < lines.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", n + 1, ": not an arbor eval result; use another --results file"));
      } else {
        torn = true;
      }
    }
  }
  // Rewritten (through a renamed temporary, so a crash loses nothing) without a torn last line
  // and with a final newline, so appends start on a line of their own.
  if (torn || !kept.empty()) {
    RETURN_IF_ERROR(base::WriteFileAtomically(path, kept));
  }
  FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    return absl::UnavailableError(absl::StrCat(path, ": cannot open the results file"));
  }
  auto log = std::unique_ptr<ResultsLog>(new ResultsLog(path, file));
  absl::MutexLock lock(&log->mu_);
  for (Outcome& outcome : outcomes) {
    log->index_[outcome.Key()] = log->outcomes_.size();
    log->outcomes_.push_back(std::move(outcome));
  }
  return log;
}

ResultsLog::~ResultsLog() {
  absl::MutexLock lock(&mu_);
  std::fclose(file_);
}

bool ResultsLog::Has(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  return index_.contains(key);
}

absl::Status ResultsLog::Append(const Outcome& outcome) {
  // One write per line, so a kill leaves whole lines and at most one torn last line.
  const std::string line = ToJson(outcome).dump() + "\n";
  absl::MutexLock lock(&mu_);
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    return absl::UnavailableError(absl::StrCat(path_, ": cannot append a result"));
  }
  index_[outcome.Key()] = outcomes_.size();
  outcomes_.push_back(outcome);
  return absl::OkStatus();
}

std::vector<Outcome> ResultsLog::outcomes() const {
  absl::MutexLock lock(&mu_);
  return outcomes_;
}

}  // namespace arbor::tools::eval
