// The results file of `arbor eval`: one JSON line per answer (an item, a strategy, a seed),
// appended and flushed as each answer arrives, so an interrupted run loses at most the answers
// in flight and the same command resumes where it stopped. A torn last line (the process
// killed mid-write) is ignored on reading.
#ifndef ARBOR_TOOLS_EVAL_RESULTS_LOG_H_
#define ARBOR_TOOLS_EVAL_RESULTS_LOG_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace arbor::tools::eval {

// One answer.
struct Outcome {
  std::string item;
  std::string strategy;  // The strategy's label.
  uint64_t seed = 0;     // 0 for deterministic strategies (one answer stands for every seed).
  std::string family;
  int level = 0;
  std::string output;     // The answering generation's text (or the chosen choice).
  std::string extracted;  // The answer found in it.
  bool correct = false;
  int64_t generated_tokens = 0;  // Committed tokens over all generations of the answer.
  int64_t explored_tokens = 0;   // Computed but not committed (search branches, backspaces).
  double wall_s = 0;             // Wall time of the answer.
  int samples = 1;               // Generations behind the answer.

  std::string Key() const;  // item, strategy and seed.
};

class ResultsLog {
 public:
  // Opens (creating) `path` for appending, after reading the answers already in it.
  // INVALID_ARGUMENT naming the line for a malformed line other than a torn last one.
  static absl::StatusOr<std::unique_ptr<ResultsLog>> Open(const std::string& path);
  ~ResultsLog();

  bool Has(const std::string& key) const;
  // Appends and flushes one line.
  absl::Status Append(const Outcome& outcome);
  // Every answer, read and appended, in order.
  std::vector<Outcome> outcomes() const;

 private:
  ResultsLog(std::string path, FILE* file) : path_(std::move(path)), file_(file) {}

  const std::string path_;
  mutable absl::Mutex mu_;
  FILE* file_ ABSL_GUARDED_BY(mu_);
  std::vector<Outcome> outcomes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, size_t> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_RESULTS_LOG_H_
