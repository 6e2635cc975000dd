// The enums of a policy and its steps as they cross the wire: each proto enum of entropix.proto
// beside the entropix value it stands for, in one table per enum (enum_table.h) that serves both
// directions of policy_convert.h.
#ifndef ARBOR_POLICY_POLICY_ENUMS_H_
#define ARBOR_POLICY_POLICY_ENUMS_H_

#include <array>

#include "arbor/v1/entropix.pb.h"
#include "entropix/attention_metrics.h"
#include "entropix/policy_config.h"
#include "entropix/strategy.h"
#include "policy/enum_table.h"

namespace arbor::policy {

inline constexpr EnumTable kPolicyModes(
    std::array<EnumPair<v1::PolicyMode, entropix::PolicyMode>, 3>{{
        {v1::POLICY_MODE_SEARCH, entropix::PolicyMode::kSearch},
        {v1::POLICY_MODE_CANONICAL, entropix::PolicyMode::kCanonical},
        {v1::POLICY_MODE_TRACE, entropix::PolicyMode::kTrace},
    }});

inline constexpr EnumTable kBranchModes(
    std::array<EnumPair<v1::BranchMode, entropix::BranchMode>, 2>{{
        {v1::BRANCH_MODE_ROLLOUT, entropix::BranchMode::kRollout},
        {v1::BRANCH_MODE_BEAM, entropix::BranchMode::kBeam},
    }});

inline constexpr EnumTable kTraceVotes(std::array<EnumPair<v1::TraceVote, entropix::TraceVote>, 2>{{
    {v1::TRACE_VOTE_MARGIN, entropix::TraceVote::kMargin},
    {v1::TRACE_VOTE_GROUP_CONFIDENCE, entropix::TraceVote::kGroupConfidence},
}});

inline constexpr EnumTable kAttentionModes(
    std::array<EnumPair<v1::AttentionMode, entropix::AttentionMode>, 2>{{
        {v1::ATTENTION_MODE_EXACT, entropix::AttentionMode::kExact},
        {v1::ATTENTION_MODE_REFERENCE, entropix::AttentionMode::kReference},
    }});

inline constexpr EnumTable kStrategies(std::array<EnumPair<v1::Strategy, entropix::Strategy>, 9>{{
    {v1::STRATEGY_ARGMAX, entropix::Strategy::kArgmax},
    {v1::STRATEGY_ADAPTIVE, entropix::Strategy::kAdaptive},
    {v1::STRATEGY_BRANCH, entropix::Strategy::kBranch},
    {v1::STRATEGY_INSERT, entropix::Strategy::kInsert},
    {v1::STRATEGY_BACKSPACE, entropix::Strategy::kBackspace},
    {v1::STRATEGY_HOT_SAMPLE, entropix::Strategy::kHotSample},
    {v1::STRATEGY_RESAMPLE, entropix::Strategy::kResample},
    {v1::STRATEGY_BRANCH_SAMPLE, entropix::Strategy::kBranchSample},
    {v1::STRATEGY_FORCED, entropix::Strategy::kForced},
}});

}  // namespace arbor::policy

#endif  // ARBOR_POLICY_POLICY_ENUMS_H_
