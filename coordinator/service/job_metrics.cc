#include "coordinator/service/job_metrics.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "arbor/v1/entropix.pb.h"

namespace arbor::coordinator {
namespace {

// Latencies a client of a streamed job notices: from milliseconds to minutes.
const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> buckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                              2.5,   5,    10,    30,   60,  120,  300};
  return buckets;
}

// An enum value's name as a label value: FINISH_REASON_STOP_TOKEN -> "stop_token".
std::string LabelValue(const google::protobuf::EnumValueDescriptor& value,
                       absl::string_view prefix) {
  absl::string_view name = value.name();
  if (absl::StartsWith(name, prefix)) name.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(name);
}

// The label values of every value of `type` but the UNSPECIFIED one (number 0).
std::vector<std::string> LabelValues(const google::protobuf::EnumDescriptor& type,
                                     absl::string_view prefix) {
  std::vector<std::string> values;
  for (int i = 0; i < type.value_count(); ++i) {
    if (type.value(i)->number() != 0) values.push_back(LabelValue(*type.value(i), prefix));
  }
  return values;
}

constexpr char kFinishPrefix[] = "FINISH_REASON_";
constexpr char kStrategyPrefix[] = "STRATEGY_";

}  // namespace

JobMetrics::JobMetrics(metrics::Registry& registry)
    : jobs_finished_(registry.AddCounter(
          "arbor_coordinator_jobs_finished_total", "Jobs that ended, by finish reason.",
          {{"reason", LabelValues(*arbor::v1::FinishReason_descriptor(), kFinishPrefix)}})),
      prompt_tokens_(registry
                         .AddCounter("arbor_coordinator_prompt_tokens_total",
                                     "Prompt tokens of the jobs that ended.")
                         .Get()),
      committed_tokens_(registry
                            .AddCounter("arbor_coordinator_committed_tokens_total",
                                        "Generated tokens committed by the jobs that ended "
                                        "(usage.generated_tokens: inserts included).")
                            .Get()),
      explored_tokens_(registry
                           .AddCounter("arbor_coordinator_explored_tokens_total",
                                       "Tokens computed on pruned branches or backspaced, by the "
                                       "jobs that ended (usage.explored_tokens).")
                           .Get()),
      branch_width_(registry
                        .AddHistogram("arbor_coordinator_branch_width",
                                      "Candidates of each branch opened.",
                                      {2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64})
                        .Get()),
      backspaces_(registry
                      .AddCounter("arbor_coordinator_backspaces_total",
                                  "Committed tokens removed by BACKSPACE.")
                      .Get()),
      inserted_tokens_(registry
                           .AddCounter("arbor_coordinator_inserted_tokens_total",
                                       "Thinking tokens appended by INSERT.")
                           .Get()),
      rehomes_(registry
                   .AddCounter("arbor_coordinator_rehomes_total",
                               "Jobs moved to another worker (the first failed, drained or "
                               "left).")
                   .Get()),
      time_to_first_token_(registry
                               .AddHistogram("arbor_coordinator_time_to_first_token_seconds",
                                             "From a job's submission to its first streamed "
                                             "token, queueing included, in seconds.",
                                             LatencyBuckets())
                               .Get()),
      inter_token_(registry
                       .AddHistogram("arbor_coordinator_inter_token_seconds",
                                     "Between consecutive token events of a job, in seconds "
                                     "(tokens of one worker run arrive together: many are near "
                                     "0).",
                                     LatencyBuckets())
                       .Get()),
      streamed_tokens_(registry
                           .AddCounter("arbor_coordinator_streamed_tokens_total",
                                       "Tokens sent to clients, counted as they stream (a token "
                                       "later backspaced stays counted; committed_tokens counts "
                                       "what jobs kept, when they end).")
                           .Get()),
      queue_seconds_(registry
                         .AddHistogram("arbor_coordinator_queue_seconds",
                                       "From a job's submission to its first worker call (the "
                                       "admission queue), for jobs that ended, in seconds.",
                                       LatencyBuckets())
                         .Get()),
      job_seconds_(registry
                       .AddHistogram("arbor_coordinator_job_seconds",
                                     "From a job's submission to its end, in seconds.",
                                     LatencyBuckets())
                       .Get()) {
  // Strategies are counted by the job (StrategyCounts); each count field is named after its
  // strategy, so the label values are the enum's and the fields are found by name.
  metrics::Family<metrics::Counter>& strategies = registry.AddCounter(
      "arbor_coordinator_strategies_total",
      "Decisions of the entropix policy in the jobs that ended, by strategy.",
      {{"strategy", LabelValues(*arbor::v1::Strategy_descriptor(), kStrategyPrefix)}});
  const google::protobuf::Descriptor& counts = *arbor::v1::StrategyCounts::descriptor();
  for (int i = 0; i < counts.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = counts.field(i);
    strategies_.emplace_back(field, &strategies.WithLabels({field->name()}));
  }
}

void JobMetrics::Observe(const arbor::v1::GenerateEvent& event, JobState& job) {
  switch (event.event_case()) {
    case arbor::v1::GenerateEvent::kToken:
      streamed_tokens_.Inc();
      return OnTokens(event.time_us(), job);
    case arbor::v1::GenerateEvent::kInsert:
      inserted_tokens_.Inc(event.insert().token_ids_size());
      streamed_tokens_.Inc(event.insert().token_ids_size());
      return OnTokens(event.time_us(), job);
    case arbor::v1::GenerateEvent::kBackspace:
      return backspaces_.Inc();
    case arbor::v1::GenerateEvent::kBranchOpened:
      return branch_width_.Observe(event.branch_opened().candidates_size());
    case arbor::v1::GenerateEvent::kRehomed:
      return rehomes_.Inc();
    case arbor::v1::GenerateEvent::kFinished:
      return OnFinished(event.finished());
    default:
      return;
  }
}

void JobMetrics::OnTokens(int64_t time_us, JobState& job) {
  if (job.last_token_us < 0) {
    time_to_first_token_.Observe(time_us * 1e-6);
  } else {
    inter_token_.Observe((time_us - job.last_token_us) * 1e-6);
  }
  job.last_token_us = time_us;
}

void JobMetrics::OnFinished(const arbor::v1::FinishedEvent& finished) {
  const google::protobuf::EnumValueDescriptor* reason =
      arbor::v1::FinishReason_descriptor()->FindValueByNumber(finished.reason());
  jobs_finished_
      .WithLabels(
          {reason == nullptr ? metrics::kOtherLabelValue : LabelValue(*reason, kFinishPrefix)})
      .Inc();
  queue_seconds_.Observe(finished.timings().queued_us() * 1e-6);
  job_seconds_.Observe(finished.timings().total_us() * 1e-6);
  prompt_tokens_.Inc(finished.usage().prompt_tokens());
  committed_tokens_.Inc(finished.usage().generated_tokens());
  explored_tokens_.Inc(finished.usage().explored_tokens());
  const google::protobuf::Reflection& reflection = *finished.strategies().GetReflection();
  for (const auto& [field, counter] : strategies_) {
    counter->Inc(reflection.GetInt32(finished.strategies(), field));
  }
}

}  // namespace arbor::coordinator
