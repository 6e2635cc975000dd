// The contracts survive serialisation: every message family round-trips, unset optional policy
// fields stay distinguishable from explicit zeros (the server default depends on it), and enums
// default to their _UNSPECIFIED value.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "arbor/v1/cluster.pb.h"
#include "arbor/v1/generation.pb.h"
#include "arbor/v1/worker.pb.h"

namespace arbor::v1 {
namespace {

using google::protobuf::util::MessageDifferencer;

template <typename T>
T RoundTrip(const T& message) {
  std::string wire;
  EXPECT_TRUE(message.SerializeToString(&wire));
  T back;
  EXPECT_TRUE(back.ParseFromString(wire));
  return back;
}

TEST(ProtoRoundTrip, GenerateRequestWithFullPolicy) {
  GenerateRequest request;
  request.mutable_chat()->set_add_generation_prompt(true);
  ChatMessage* message = request.mutable_chat()->add_messages();
  message->set_role("user");
  message->set_content("Why is the sky blue? 天空 🌤");
  request.set_max_tokens(128);
  request.set_seed(0xdeadbeefcafeULL);
  PolicyConfig* policy = request.mutable_policy();
  policy->set_mode(POLICY_MODE_CANONICAL);
  policy->mutable_sampling()->set_temperature(0.666f);
  policy->mutable_thresholds()->set_lehv_varentropy(5.0f);
  policy->mutable_coefficients()->set_hehv_temp_floor(2.0f);
  policy->mutable_branch()->set_mode(BRANCH_MODE_BEAM);
  policy->mutable_insert()->add_tokens(2564);
  policy->mutable_backspace()->set_max_per_job(8);
  policy->mutable_adaptive()->set_n_samples(5);
  policy->set_attention_mode(ATTENTION_MODE_REFERENCE);
  request.mutable_stop()->add_stop_strings("\n\n");
  const GenerateRequest back = RoundTrip(request);
  EXPECT_TRUE(MessageDifferencer::Equals(request, back)) << back.DebugString();
  EXPECT_EQ(back.prompt_case(), GenerateRequest::kChat);
}

TEST(ProtoRoundTrip, OptionalPolicyFieldsKeepPresence) {
  PolicyConfig policy;
  policy.mutable_sampling()->set_top_k(0);  // Explicit zero: must stay "set".
  const PolicyConfig back = RoundTrip(policy);
  EXPECT_TRUE(back.sampling().has_top_k());
  EXPECT_FALSE(back.sampling().has_temperature());
  EXPECT_FALSE(back.has_mode());
  EXPECT_EQ(back.mode(), POLICY_MODE_UNSPECIFIED);
}

TEST(ProtoRoundTrip, RunRequestAndResponse) {
  RunRequest request;
  RunItem* item = request.add_items();
  item->set_sequence_id(7);
  item->set_fork_from(3);
  item->set_fork_length(100);
  item->add_append(42);
  item->set_max_steps(32);
  item->add_bans()->set_token_id(5);
  EXPECT_TRUE(MessageDifferencer::Equals(request, RoundTrip(request)));

  RunResponse response;
  RunResult* result = response.add_results();
  result->set_sequence_id(7);
  result->set_stop_reason(STOP_REASON_STRUCTURAL);
  StepResult* step = result->add_steps();
  step->set_token_id(-1);
  step->set_strategy(STRATEGY_BRANCH);
  step->mutable_metrics()->set_varentropy(6.5f);
  TokenLogprob* top = step->add_top_k();
  top->set_token_id(11);
  top->set_logprob(-0.25f);
  EXPECT_TRUE(MessageDifferencer::Equals(response, RoundTrip(response)));
  EXPECT_FALSE(RoundTrip(RunItem()).has_fork_from());
}

TEST(ProtoRoundTrip, TreeEventsAndCluster) {
  GenerateEvent event;
  event.set_job_id("job-1");
  BranchResolved* resolved = event.mutable_branch_resolved();
  resolved->set_winner_node_id(4);
  resolved->add_candidate_node_ids(4);
  resolved->add_candidate_node_ids(9);
  resolved->add_scores(-0.5f);
  resolved->add_scores(-1.5f);
  resolved->add_pruned_node_ids(9);
  EXPECT_TRUE(MessageDifferencer::Equals(event, RoundTrip(event)));

  Tree tree;
  TreeNode* node = tree.add_nodes();
  node->set_id(1);
  node->set_status(NODE_STATUS_PRUNED);
  node->set_strategy(STRATEGY_BACKSPACE);
  EXPECT_TRUE(MessageDifferencer::Equals(tree, RoundTrip(tree)));

  RegisterWorkerRequest registration;
  registration.set_address("10.0.0.2:50061");
  registration.mutable_info()->mutable_model()->set_vocab_size(128256);
  EXPECT_TRUE(MessageDifferencer::Equals(registration, RoundTrip(registration)));
}

TEST(ProtoRoundTrip, EnumsDefaultToUnspecified) {
  EXPECT_EQ(Job().state(), JOB_STATE_UNSPECIFIED);
  EXPECT_EQ(StepResult().strategy(), STRATEGY_UNSPECIFIED);
  EXPECT_EQ(RunResult().stop_reason(), STOP_REASON_UNSPECIFIED);
  EXPECT_EQ(WorkerStatus().state(), WORKER_STATE_UNSPECIFIED);
  EXPECT_EQ(FinishedEvent().reason(), FINISH_REASON_UNSPECIFIED);
}

}  // namespace
}  // namespace arbor::v1
