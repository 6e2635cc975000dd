// Conversion between the entropix library's types and their arbor.v1 messages (entropix.proto):
// PolicyConfig (applied over server defaults: unset optional fields keep the default), Metrics,
// Strategy and LogitProcessors. Lives outside entropix/ so the algorithm library never depends on
// protobuf.
#ifndef ARBOR_POLICY_POLICY_CONVERT_H_
#define ARBOR_POLICY_POLICY_CONVERT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/entropix.pb.h"
#include "entropix/logit_processors.h"
#include "entropix/metrics.h"
#include "entropix/policy_config.h"
#include "entropix/strategy.h"

namespace arbor::policy {

// `defaults` with every field set in `proto` replacing its value; UNSPECIFIED enums and an empty
// insert.tokens keep the default. The result is validated: InvalidArgument names the field and
// its range (e.g. "branch.width: 1 is outside [2, 64]"), or an unknown enum value.
absl::StatusOr<entropix::PolicyConfig> PolicyFromProto(const v1::PolicyConfig& proto,
                                                       const entropix::PolicyConfig& defaults);
// Every field set explicitly, so PolicyFromProto(PolicyToProto(c), anything) == c.
v1::PolicyConfig PolicyToProto(const entropix::PolicyConfig& config);
// The policy a job ran with, `ran`, with `change`'s fields in place of its own, every field set
// (a replay's policy); InvalidArgument names the request field ("policy.branch.width: ...").
absl::StatusOr<v1::PolicyConfig> ChangedPolicy(const entropix::PolicyConfig& ran,
                                               const v1::PolicyConfig& change);

v1::Metrics MetricsToProto(const entropix::Metrics& metrics);
entropix::Metrics MetricsFromProto(const v1::Metrics& proto);

v1::Strategy StrategyToProto(entropix::Strategy strategy);
// InvalidArgument for STRATEGY_UNSPECIFIED and unknown values.
absl::StatusOr<entropix::Strategy> StrategyFromProto(v1::Strategy strategy);

// The processors of `proto`, validated for a vocabulary of `vocab` (InvalidArgument naming the
// field under `prefix`, e.g. "processors.logit_bias[7]: ..."); output_start is `prompt_length`.
absl::StatusOr<entropix::LogitProcessorConfig> LogitProcessorsFromProto(
    const v1::LogitProcessors& proto, int32_t vocab, int32_t prompt_length,
    absl::string_view prefix);

}  // namespace arbor::policy

#endif  // ARBOR_POLICY_POLICY_CONVERT_H_
