// Seeded task generators for `arbor eval`: items with checkable answers, in families, each with
// a difficulty level, so a calibration can find the level where a model is neither always right
// nor always wrong and an evaluation can then measure whether search helps there.
//
// An item is one JSON object of the task file format (tools/eval/tasks/README.md): "id",
// "messages" (one user message), "answer", "match", and as the family needs "extract",
// "choices" and "max_tokens", plus "family" and "level". Ids are
// "<family>-L<level>-s<seed>-<index>".
//
// Items depend only on the arguments: the random stream is std::mt19937_64 (whose output the
// standard fixes) with this project's own bounded draws, seeded from (family, level, seed)
// through a hash, so the same call gives byte-identical items on every machine and standard
// library, and different seeds give independent streams. Within one call an item whose prompt
// repeats an earlier one is redrawn a few times, so small sets hold distinct questions wherever
// the level has enough of them.
#ifndef ARBOR_TOOLS_EVAL_TASKS_TASK_GENERATORS_H_
#define ARBOR_TOOLS_EVAL_TASKS_TASK_GENERATORS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arbor::tools::eval {

// The most items one call generates.
inline constexpr int kMaxTaskCount = 1'000'000;

// The family names, in a fixed order: arithmetic, word_problems, counting, letters, choice.
std::vector<std::string> TaskFamilies();

// The hardest level of `family` (levels run 1..MaxLevel). INVALID_ARGUMENT naming the known
// families when `family` is not one.
absl::StatusOr<int> MaxLevel(std::string_view family);

// `count` items of `family` at `level`, deterministic in (family, level, count, seed); a smaller
// count gives a prefix of a larger one. INVALID_ARGUMENT for an unknown family, a level outside
// 1..MaxLevel(family), or a count outside 0..kMaxTaskCount.
absl::StatusOr<std::vector<nlohmann::json>> GenerateTasks(std::string_view family, int level,
                                                          int count, uint64_t seed);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_TASKS_TASK_GENERATORS_H_
