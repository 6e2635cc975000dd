#include "tests/coordinator/job/job_harness.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::coordinator::testing {

std::string Decode(absl::Span<const int32_t> ids) {
  std::string text;
  for (int32_t id : ids) text.push_back(static_cast<char>('0' + id));
  return text;
}

JobSpec BaseSpec(int32_t max_tokens) {
  JobSpec spec;
  spec.job_id = "job-1";
  spec.prompt_token_ids = {1, 2, 3};
  spec.vocab_size = kVocab;
  spec.max_context = 512;
  spec.max_tokens = max_tokens;
  spec.seed = kSeed;
  spec.policy.insert.tokens = {kInsertToken};
  spec.eos_token_ids = {kEos};
  return spec;
}

Script ByPosition(std::map<int32_t, ScriptedStep> steps) {
  return [steps](const ScriptInput& in) {
    auto it = steps.find(in.position);
    return it != steps.end() ? it->second : Lelv({{10, 0.9}, {11, 0.1}});
  };
}

Harness::Harness(Script script)
    : worker(std::make_shared<ScriptedWorker>("w0", script, std::vector<int32_t>{kEos})),
      spare(std::make_shared<ScriptedWorker>("w1", script, std::vector<int32_t>{kEos})) {}

std::shared_ptr<Job> Harness::StartHeld(int32_t max_tokens, int32_t steps_per_run) {
  worker->Hold(true);
  JobOptions options;
  options.steps_per_run = steps_per_run;
  std::shared_ptr<Job> job = Make(BaseSpec(max_tokens), options);
  job->Start();
  return job;
}

std::shared_ptr<Job> Harness::Make(JobSpec spec, JobOptions options) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(spec.seed));
  JobEnvironment env;
  env.worker = worker;
  env.next_sequence_id = [this] { return next_id++; };
  env.decode = Decode;
  env.clock = &clock;
  env.sink = [this](const arbor::v1::GenerateEvent& e) { events.push_back(e); };
  env.rehome = [this](const WorkerClient& failed,
                      const absl::Status&) -> absl::StatusOr<std::shared_ptr<WorkerClient>> {
    rehome_calls.push_back(failed.id());
    if (!rehome_error.ok()) return rehome_error;
    return std::shared_ptr<WorkerClient>(spare);
  };
  if (timed) {
    env.schedule_after = [this](absl::Duration delay, std::function<void()> callback) {
      timers.emplace_back(delay, std::move(callback));
    };
  }
  // Answer patterns are compiled where requests are checked; a test's spec is checked here.
  if (!spec.policy.trace.answer_pattern.empty() && spec.answer_pattern == nullptr) {
    absl::StatusOr<std::shared_ptr<const base::AnswerPattern>> pattern =
        base::AnswerPattern::Compile(spec.policy.trace.answer_pattern);
    EXPECT_TRUE(pattern.ok()) << pattern.status();
    if (pattern.ok()) spec.answer_pattern = *std::move(pattern);
  }
  absl::StatusOr<std::shared_ptr<Job>> job = Job::Create(std::move(spec), options, env);
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

std::vector<arbor::v1::GenerateEvent> Harness::Of(arbor::v1::GenerateEvent::EventCase c) const {
  std::vector<arbor::v1::GenerateEvent> out;
  for (const auto& e : events) {
    if (e.event_case() == c) out.push_back(e);
  }
  return out;
}

std::vector<std::string> RunToTree(Script script, JobSpec spec) {
  Harness h(std::move(script));
  std::shared_ptr<Job> job = h.Make(std::move(spec));
  job->Start();
  std::vector<std::string> nodes;
  job->ReadTree([&](const SearchTree& tree) {
    for (NodeId id = 0; id < tree.size(); ++id) {
      const Node& n = tree.node(id);
      nodes.push_back(absl::StrCat(n.parent, " ", n.token_id, " ", n.status, " ", n.strategy, " ",
                                   n.position, " ", n.sequence_id, " ", n.branch_score));
    }
  });
  return nodes;
}

void ExpectCleanFinish(const Job& job, const ScriptedWorker& worker) {
  EXPECT_NE(job.state(), arbor::v1::JOB_STATE_RUNNING);
  EXPECT_THAT(worker.live(), ::testing::IsEmpty()) << "every sequence is released at the end";
  job.ReadTree([](const SearchTree& tree) { EXPECT_TRUE(tree.CheckInvariants().ok()); });
}

}  // namespace arbor::coordinator::testing
