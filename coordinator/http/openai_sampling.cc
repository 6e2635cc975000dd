#include "coordinator/http/openai_sampling.h"

#include <algorithm>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "policy/policy_presets.h"

namespace arbor::coordinator::http {
namespace {

using TraceInt = int32_t (arbor::v1::TraceOptions::*)() const;
using TraceHas = bool (arbor::v1::TraceOptions::*)() const;

// A trace option as the job will see it: the request's, else the server's; nullopt when
// neither sets it.
std::optional<int64_t> TraceOption(const arbor::v1::PolicyConfig& policy,
                                   const arbor::v1::PolicyConfig& server_policy, TraceHas has,
                                   TraceInt get) {
  if ((policy.trace().*has)()) return (policy.trace().*get)();
  if ((server_policy.trace().*has)()) return (server_policy.trace().*get)();
  return std::nullopt;
}

absl::Status Conflict(absl::string_view field, absl::string_view policy_field) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": also given as arbor.policy.", policy_field, "; drop one of them"));
}

// TRACE: `temperature` is the traces' own (trace.temperature); top_p, top_k and min_p shape
// every sampled trace step through `sampling`.
absl::Status ApplyToTraces(const SamplingFields& fields, bool explicit_policy,
                           arbor::v1::PolicyConfig& policy) {
  if (fields.temperature) {
    if (explicit_policy && policy.trace().has_temperature()) {
      return Conflict("temperature", "trace.temperature");
    }
    policy.mutable_trace()->set_temperature(static_cast<float>(*fields.temperature));
  }
  return absl::OkStatus();
}

// The sampler's base parameters, shared by every policy that samples.
absl::Status ApplyToSampler(const SamplingFields& fields, bool explicit_policy,
                            arbor::v1::PolicyConfig& policy) {
  arbor::v1::SamplingParams& s = *policy.mutable_sampling();
  if (explicit_policy) {
    if (fields.top_p && s.has_top_p()) return Conflict("top_p", "sampling.top_p");
    if (fields.top_k && s.has_top_k()) return Conflict("top_k", "sampling.top_k");
    if (fields.min_p && s.has_min_p()) return Conflict("min_p", "sampling.min_p");
  }
  if (fields.top_p) s.set_top_p(static_cast<float>(*fields.top_p));
  if (fields.top_k) s.set_top_k(*fields.top_k);
  if (fields.min_p) s.set_min_p(static_cast<float>(*fields.min_p));
  return absl::OkStatus();
}

// A seed for choices that must share one when the client gave none; never 0, the server's
// "pick one", which would give each choice its own.
int64_t DrawSeed() {
  std::random_device device;
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) | device();
  return static_cast<int64_t>(seed == 0 ? 1 : seed);
}

}  // namespace

bool RunsTraces(const arbor::v1::PolicyConfig& policy,
                const arbor::v1::PolicyConfig& server_policy) {
  const arbor::v1::PolicyMode mode = policy.has_mode() ? policy.mode() : server_policy.mode();
  return mode == arbor::v1::POLICY_MODE_TRACE;
}

absl::Status ApplySampling(const SamplingFields& fields, bool explicit_policy,
                           const arbor::v1::PolicyConfig& server_policy,
                           arbor::v1::PolicyConfig& policy) {
  if (RunsTraces(policy, server_policy)) {
    if (absl::Status s = ApplyToTraces(fields, explicit_policy, policy); !s.ok()) return s;
    return ApplyToSampler(fields, explicit_policy, policy);
  }
  if (fields.temperature && *fields.temperature == 0) {
    // Greedy decoding replaces the policy: only a policy the client wrote out conflicts.
    if (explicit_policy) {
      return absl::InvalidArgumentError(
          "arbor.policy: cannot be combined with temperature 0 (greedy decoding, which replaces "
          "the policy); drop temperature or arbor.policy");
    }
    policy = policy::GreedyPolicy();
    return absl::OkStatus();
  }
  if (fields.temperature &&
      policy.SerializeAsString() == policy::GreedyPolicy().SerializeAsString()) {
    return absl::InvalidArgumentError(
        "temperature: the policy is greedy decoding (arbor.policy_name \"greedy\"), which draws "
        "nothing; drop temperature, or name a policy that samples");
  }
  if (fields.temperature) {
    if (explicit_policy && policy.sampling().has_temperature()) {
      return Conflict("temperature", "sampling.temperature");
    }
    policy.mutable_sampling()->set_temperature(static_cast<float>(*fields.temperature));
  }
  return ApplyToSampler(fields, explicit_policy, policy);
}

absl::StatusOr<ChoicePlan> PlanChoices(int n, std::optional<int64_t> seed,
                                       const arbor::v1::PolicyConfig& policy,
                                       const arbor::v1::PolicyConfig& server_policy) {
  ChoicePlan plan;
  plan.seed = seed;
  plan.traces = RunsTraces(policy, server_policy);
  if (!plan.traces || n == 1) return plan;
  const std::optional<int64_t> max_traces =
      TraceOption(policy, server_policy, &arbor::v1::TraceOptions::has_max_traces,
                  &arbor::v1::TraceOptions::max_traces);
  const std::optional<int64_t> width = TraceOption(
      policy, server_policy, &arbor::v1::TraceOptions::has_width, &arbor::v1::TraceOptions::width);
  const std::optional<int64_t> depth =
      TraceOption(policy, server_policy, &arbor::v1::TraceOptions::has_max_depth,
                  &arbor::v1::TraceOptions::max_depth);
  if (max_traces && width && depth) {
    int64_t leaves = 1;  // width^depth, capped where it stops mattering.
    for (int64_t d = 0; d < *depth && leaves < *max_traces; ++d) {
      leaves *= std::max<int64_t>(1, *width);
    }
    const int64_t most = std::min(*max_traces, leaves);
    if (n > most) {
      return absl::InvalidArgumentError(absl::StrCat(
          "n: ", n, " choices of a trace policy are its ", n, " best distinct traces, but it ",
          "opens at most ", most, " (trace.width ", *width, ", max_depth ", *depth, ", max_traces ",
          *max_traces, "); lower n, or raise arbor.policy.trace.width or trace.max_traces"));
    }
  }
  if (!plan.seed) plan.seed = DrawSeed();
  plan.lift_floor = !policy.trace().has_candidate_min_p();
  return plan;
}

void SetChoice(const ChoicePlan& plan, int j, arbor::v1::GenerateRequest& request) {
  const int offset = plan.traces ? 0 : j;
  if (plan.seed) {
    const uint64_t s = static_cast<uint64_t>(*plan.seed) + static_cast<uint64_t>(offset);
    request.set_seed(s == 0 ? std::numeric_limits<uint64_t>::max() : s);
  }
  if (plan.lift_floor) request.mutable_policy()->mutable_trace()->set_candidate_min_p(0.0f);
  if (plan.traces && j > 0) request.mutable_policy()->mutable_trace()->set_commit_rank(j);
}

}  // namespace arbor::coordinator::http
