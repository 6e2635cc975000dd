// How OpenAI's sampling fields (temperature, top_p, top_k, min_p), `n` and `seed` become the
// policy and seed of each choice's job, under every kind of policy (docs/HTTP.md, "Fields under
// each policy").
//
// A TRACE policy (cot_decoding, eager, deepconf, trace) draws its traces at `temperature` (0:
// greedy traces, as without it) with top_p, top_k and min_p, and answers `n` with its n best
// distinct traces: the n choices run the same search with one seed, choice j committing the
// trace ranked j + 1 (trace.commit_rank). Every other policy takes the fields as its sampler's
// base parameters, temperature 0 being greedy decoding, and choice j draws with seed + j.
//
// A preset named by arbor.policy_name only gives defaults, which these fields replace; a field
// given both here and in arbor.policy is a conflict, refused with the field to drop.
#ifndef ARBOR_COORDINATOR_HTTP_OPENAI_SAMPLING_H_
#define ARBOR_COORDINATOR_HTTP_OPENAI_SAMPLING_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator::http {

// The request's sampling fields, each range-checked; absent ones are nullopt.
struct SamplingFields {
  std::optional<double> temperature;  // [0, 2].
  std::optional<double> top_p;        // (0, 1].
  std::optional<int32_t> top_k;       // [1, 1024] (the client's −1 and 0 already 1024).
  std::optional<double> min_p;        // [0, 1).
};

// Whether `policy` (the request's own; empty when it has none) over `server_policy` (the
// coordinator's default) runs TRACE mode.
bool RunsTraces(const arbor::v1::PolicyConfig& policy,
                const arbor::v1::PolicyConfig& server_policy);

// Writes `fields` into `policy`. `explicit_policy`: `policy` is the client's arbor.policy, whose
// fields the same field given the OpenAI way conflicts with (INVALID_ARGUMENT naming the field
// to drop); otherwise it is a preset or empty, and these fields replace its values.
absl::Status ApplySampling(const SamplingFields& fields, bool explicit_policy,
                           const arbor::v1::PolicyConfig& server_policy,
                           arbor::v1::PolicyConfig& policy);

// How the n choices of a prompt differ.
struct ChoicePlan {
  bool traces = false;          // Ranks of one trace search (else independent draws).
  std::optional<int64_t> seed;  // The request's; under TRACE with n > 1 one is drawn if absent.
  // TRACE with n > 1 and no trace.candidate_min_p in the request: the search forks into its
  // width's most likely tokens whatever their probability, so that n distinct traces exist where
  // the width allows (a floor would leave a confident first token one trace, and fail the job).
  bool lift_floor = false;
};

// The plan for `n` choices under `policy` over `server_policy`. Under TRACE, n above the traces
// the policy can open (trace.max_traces, trace.width^max_depth) is INVALID_ARGUMENT naming `n`.
absl::StatusOr<ChoicePlan> PlanChoices(int n, std::optional<int64_t> seed,
                                       const arbor::v1::PolicyConfig& policy,
                                       const arbor::v1::PolicyConfig& server_policy);

// Choice j's seed (TRACE: the shared one; else seed + j; the API's seed 0 is 2^64 − 1, since 0
// is the server's "pick one") and, under TRACE, its trace.commit_rank and the lifted floor.
void SetChoice(const ChoicePlan& plan, int j, arbor::v1::GenerateRequest& request);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_OPENAI_SAMPLING_H_
