// How a crowded forward step's tokens are divided between the jobs that want them: max-min fair
// shares (water-filling), so a job that wants little gets all it wants and the wide ones split
// the rest evenly. The engine (engine.h) applies it to every step several jobs have work for.
#ifndef ARBOR_WORKER_ENGINE_FAIR_SHARE_H_
#define ARBOR_WORKER_ENGINE_FAIR_SHARE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace arbor::worker {

// Each job's share of `budget` tokens, given the tokens each wants (`wanted`, >= 0): no share
// exceeds what its job wants, the shares sum to min(budget, sum of wanted) — except that every
// job wanting something gets at least one token, so a step of more jobs than `budget` holds one
// token of each — and shares of jobs wanting more than theirs differ by at most one. The tokens
// that do not divide evenly go to the jobs from index `turn` (mod the count) on, so that a
// caller advancing `turn` every step hands them to each job in turn.
std::vector<int32_t> FairShares(const std::vector<int32_t>& wanted, int32_t budget, size_t turn);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_ENGINE_FAIR_SHARE_H_
