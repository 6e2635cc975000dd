#include "coordinator/service/request_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace arbor::coordinator {
namespace {

using arbor::v1::GenerateRequest;

// The server's defaults as a coordinator with a tokenizer resolves them: " ..." is token 7.
entropix::PolicyConfig Defaults() {
  entropix::PolicyConfig defaults;
  defaults.insert.tokens = {7};
  return defaults;
}

arbor::v1::ModelInfo TestModel() {
  arbor::v1::ModelInfo model;
  model.set_vocab_size(1000);
  model.set_max_context(128);
  model.add_eos_token_ids(2);
  return model;
}

GenerateRequest Valid() {
  GenerateRequest request;
  request.set_text("Hello");
  return request;
}

struct InvalidCase {
  const char* name;
  std::function<void(GenerateRequest&)> mutate;
  const char* field;  // Expected at the start of the message.
};

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

const InvalidCase kInvalid[] = {
    {"no prompt", [](GenerateRequest& r) { r.clear_prompt(); }, "prompt"},
    {"empty text", [](GenerateRequest& r) { r.set_text(""); }, "text"},
    {"bad utf8 text", [](GenerateRequest& r) { r.set_text("a\xC0\xAF"); }, "text"},
    {"surrogate utf8", [](GenerateRequest& r) { r.set_text("\xED\xA0\x80"); }, "text"},
    {"truncated utf8", [](GenerateRequest& r) { r.set_text("ab\xE2\x82"); }, "text"},
    {"chat without messages", [](GenerateRequest& r) { r.mutable_chat(); }, "chat.messages"},
    {"chat bad role",
     [](GenerateRequest& r) {
       auto* m = r.mutable_chat()->add_messages();
       m->set_role("user");
       m = r.mutable_chat()->add_messages();
       m->set_role("robot");
     },
     "chat.messages[1].role"},
    {"chat bad utf8",
     [](GenerateRequest& r) {
       auto* m = r.mutable_chat()->add_messages();
       m->set_role("user");
       m->set_content("\xFF");
     },
     "chat.messages[0].content"},
    {"tool calls from a user",
     [](GenerateRequest& r) {
       auto* m = r.mutable_chat()->add_messages();
       m->set_role("user");
       m->add_tool_calls()->set_name("f");
     },
     "chat.messages[0].tool_calls"},
    {"call arguments not an object",
     [](GenerateRequest& r) {
       auto* m = r.mutable_chat()->add_messages();
       m->set_role("assistant");
       auto* call = m->add_tool_calls();
       call->set_name("f");
       call->set_arguments("[1]");
     },
     "chat.messages[0].tool_calls[0]"},
    {"tool not an object",
     [](GenerateRequest& r) {
       r.mutable_chat()->add_messages()->set_role("user");
       r.mutable_chat()->add_tools("\"f\"");
     },
     "chat.tools[0]"},
    {"call opened without a generation prompt",
     [](GenerateRequest& r) {
       r.mutable_chat()->add_messages()->set_role("user");
       r.mutable_chat()->set_open_tool_call(true);
     },
     "chat.open_tool_call"},
    {"no token ids", [](GenerateRequest& r) { r.mutable_tokens(); }, "tokens.token_ids"},
    {"negative token id",
     [](GenerateRequest& r) {
       r.mutable_tokens()->add_token_ids(1);
       r.mutable_tokens()->add_token_ids(-1);
     },
     "tokens.token_ids[1]"},
    {"token id = vocab", [](GenerateRequest& r) { r.mutable_tokens()->add_token_ids(1000); },
     "tokens.token_ids[0]"},
    {"negative max_tokens", [](GenerateRequest& r) { r.set_max_tokens(-1); }, "max_tokens"},
    {"max_tokens = context", [](GenerateRequest& r) { r.set_max_tokens(128); }, "max_tokens"},
    {"top_logprobs too big", [](GenerateRequest& r) { r.set_top_logprobs(65); }, "top_logprobs"},
    {"negative top_logprobs", [](GenerateRequest& r) { r.set_top_logprobs(-1); }, "top_logprobs"},
    {"negative deadline", [](GenerateRequest& r) { r.set_deadline_ms(-5); }, "deadline_ms"},
    {"long client tag", [](GenerateRequest& r) { r.set_client_tag(std::string(257, 'x')); },
     "client_tag"},
    {"too many stop strings",
     [](GenerateRequest& r) {
       for (int i = 0; i < 17; ++i) r.mutable_stop()->add_stop_strings("s");
     },
     "stop.stop_strings"},
    {"too many stop token ids",
     [](GenerateRequest& r) {
       for (int i = 0; i < 257; ++i) r.mutable_stop()->add_stop_token_ids(1);
     },
     "stop.stop_token_ids"},
    {"long stop string",
     [](GenerateRequest& r) { r.mutable_stop()->add_stop_strings(std::string(257, 'x')); },
     "stop.stop_strings[0]"},
    {"empty stop string", [](GenerateRequest& r) { r.mutable_stop()->add_stop_strings(""); },
     "stop.stop_strings[0]"},
    {"stop id out of range", [](GenerateRequest& r) { r.mutable_stop()->add_stop_token_ids(5000); },
     "stop.stop_token_ids[0]"},
    {"policy mode unknown",
     [](GenerateRequest& r) {
       r.mutable_policy()->set_mode(static_cast<arbor::v1::PolicyMode>(9));
     },
     "policy.mode"},
    {"temperature 0",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_temperature(0); },
     "policy.sampling.temperature"},
    {"temperature nan",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_temperature(kNan); },
     "policy.sampling.temperature"},
    {"temperature 11",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_temperature(11); },
     "policy.sampling.temperature"},
    {"top_p 0", [](GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_top_p(0); },
     "policy.sampling.top_p"},
    {"top_p 1.5",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_top_p(1.5); },
     "policy.sampling.top_p"},
    {"top_k 0", [](GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_top_k(0); },
     "policy.sampling.top_k"},
    {"top_k 1025",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_top_k(1025); },
     "policy.sampling.top_k"},
    {"min_p 1", [](GenerateRequest& r) { r.mutable_policy()->mutable_sampling()->set_min_p(1); },
     "policy.sampling.min_p"},
    {"threshold negative",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_thresholds()->set_lehv_entropy(-1); },
     "policy.thresholds.lehv_entropy"},
    {"threshold infinite",
     [](GenerateRequest& r) {
       r.mutable_policy()->mutable_thresholds()->set_hehv_varentropy(kInf);
     },
     "policy.thresholds.hehv_varentropy"},
    {"coefficient nan",
     [](GenerateRequest& r) {
       r.mutable_policy()->mutable_coefficients()->set_ada_temp_attn(kNan);
     },
     "policy.coefficients.ada_temp_attn"},
    {"lehv_top_k_min 0",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_coefficients()->set_lehv_top_k_min(0); },
     "policy.coefficients.lehv_top_k_min"},
    {"branch width 1",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_branch()->set_width(1); },
     "policy.branch.width"},
    {"branch width 65",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_branch()->set_width(65); },
     "policy.branch.width"},
    {"branch max_len 0",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_branch()->set_max_len(0); },
     "policy.branch.max_len"},
    {"branch mode unknown",
     [](GenerateRequest& r) {
       r.mutable_policy()->mutable_branch()->set_mode(static_cast<arbor::v1::BranchMode>(7));
     },
     "policy.branch.mode"},
    {"branch calm_steps 0",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_branch()->set_calm_steps(0); },
     "policy.branch.calm_steps"},
    {"branch max_depth 9",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_branch()->set_max_depth(9); },
     "policy.branch.max_depth"},
    {"branch width 8 nested 8 deep",
     [](GenerateRequest& r) {
       r.mutable_policy()->mutable_branch()->set_width(8);
       r.mutable_policy()->mutable_branch()->set_max_depth(8);
     },
     "policy.branch.max_depth"},
    {"branch width 64 nested 2 deep",
     [](GenerateRequest& r) {
       r.mutable_policy()->mutable_branch()->set_width(64);
       r.mutable_policy()->mutable_branch()->set_max_depth(2);
     },
     "policy.branch.max_depth"},
    {"insert cooldown -1",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_insert()->set_cooldown(-1); },
     "policy.insert.cooldown"},
    {"insert cooldown 4097",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_insert()->set_cooldown(4097); },
     "policy.insert.cooldown"},
    {"insert token out of range",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_insert()->add_tokens(1000); },
     "policy.insert.tokens[0]"},
    {"backspace budget negative",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_backspace()->set_max_per_job(-1); },
     "policy.backspace.max_per_job"},
    {"n_samples 0",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_adaptive()->set_n_samples(0); },
     "policy.adaptive.n_samples"},
    {"n_samples 65",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_adaptive()->set_n_samples(65); },
     "policy.adaptive.n_samples"},
    {"adaptive weight huge",
     [](GenerateRequest& r) { r.mutable_policy()->mutable_adaptive()->set_w_agreement(1e9); },
     "policy.adaptive.w_agreement"},
    {"attention mode unknown",
     [](GenerateRequest& r) {
       r.mutable_policy()->set_attention_mode(static_cast<arbor::v1::AttentionMode>(3));
     },
     "policy.attention_mode"},
    {"reference_len 0", [](GenerateRequest& r) { r.mutable_policy()->set_reference_len(0); },
     "policy.reference_len"},
    {"reference_len 2^20+1",
     [](GenerateRequest& r) { r.mutable_policy()->set_reference_len((1 << 20) + 1); },
     "policy.reference_len"},
    {"repetition penalty 0",
     [](GenerateRequest& r) { r.mutable_processors()->set_repetition_penalty(0); },
     "processors.repetition_penalty"},
    {"frequency penalty 3",
     [](GenerateRequest& r) { r.mutable_processors()->set_frequency_penalty(3); },
     "processors.frequency_penalty"},
    {"presence penalty NaN",
     [](GenerateRequest& r) { r.mutable_processors()->set_presence_penalty(NAN); },
     "processors.presence_penalty"},
    {"logit bias token out of range",
     [](GenerateRequest& r) { (*r.mutable_processors()->mutable_logit_bias())[1000] = 1; },
     "processors.logit_bias[1000]"},
    {"logit bias 101",
     [](GenerateRequest& r) { (*r.mutable_processors()->mutable_logit_bias())[5] = 101; },
     "processors.logit_bias[5]"},
};

TEST(ValidateGenerateRequest, InvalidRequestsNameTheField) {
  ASSERT_GE(std::size(kInvalid), 30u);
  for (const InvalidCase& c : kInvalid) {
    SCOPED_TRACE(c.name);
    GenerateRequest request = Valid();
    c.mutate(request);
    absl::StatusOr<CheckedRequest> checked =
        ValidateGenerateRequest(request, TestModel(), ServerLimits{}, Defaults());
    ASSERT_FALSE(checked.ok());
    EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(checked.status().message().substr(0, std::string(c.field).size() + 1),
              std::string(c.field) + ":")
        << checked.status();
  }
}

TEST(ValidateGenerateRequest, MessagesStateTheRange) {
  GenerateRequest request = Valid();
  request.mutable_policy()->mutable_branch()->set_width(1);
  EXPECT_EQ(ValidateGenerateRequest(request, TestModel(), {}, Defaults()).status().message(),
            "policy.branch.width: 1 is outside [2, 64]");
  request = Valid();
  request.mutable_policy()->mutable_sampling()->set_temperature(0);
  EXPECT_EQ(ValidateGenerateRequest(request, TestModel(), {}, Defaults()).status().message(),
            "policy.sampling.temperature: 0 is outside (0, 10]");
  request = Valid();
  request.mutable_policy()->set_reference_len(0);
  EXPECT_EQ(ValidateGenerateRequest(request, TestModel(), {}, Defaults()).status().message(),
            "policy.reference_len: 0 is outside [1, 1048576]");
  // A field with a rule of its own is checked by that rule, not by its message's wildcard:
  // lehv_top_k_min is a count in [1, 1024], not a coefficient in [-100, 100].
  request = Valid();
  request.mutable_policy()->mutable_coefficients()->set_lehv_top_k_min(500);
  EXPECT_TRUE(ValidateGenerateRequest(request, TestModel(), {}, Defaults()).ok());
  request.mutable_policy()->mutable_coefficients()->set_lehv_top_k_min(1025);
  EXPECT_EQ(ValidateGenerateRequest(request, TestModel(), {}, Defaults()).status().message(),
            "policy.coefficients.lehv_top_k_min: 1025 is outside [1, 1024]");
}

TEST(ValidateGenerateRequest, ValidRequestsPassAndAreCopied) {
  GenerateRequest request;
  auto* message = request.mutable_chat()->add_messages();
  message->set_role("user");
  message->set_content("héllo ✓ 🌳");
  request.mutable_chat()->set_add_generation_prompt(true);
  request.set_max_tokens(127);
  request.set_seed(42);
  request.set_top_logprobs(64);
  request.set_deadline_ms(1500);
  request.set_client_tag("tag");
  request.mutable_stop()->add_stop_strings("\n\n");
  request.mutable_stop()->add_stop_token_ids(999);
  auto* policy = request.mutable_policy();
  policy->set_mode(arbor::v1::POLICY_MODE_CANONICAL);
  policy->mutable_sampling()->set_temperature(10);
  policy->mutable_sampling()->set_top_p(1);
  policy->mutable_sampling()->set_min_p(0);
  policy->mutable_branch()->set_width(64);
  policy->mutable_branch()->set_mode(arbor::v1::BRANCH_MODE_BEAM);
  policy->mutable_insert()->add_tokens(999);
  policy->mutable_insert()->set_cooldown(0);
  policy->mutable_adaptive()->set_n_samples(1);
  policy->set_reference_len(1 << 20);
  policy->mutable_coefficients()->set_lehv_top_k_min(5);
  request.mutable_processors()->set_repetition_penalty(2);
  request.mutable_processors()->set_frequency_penalty(-2);
  (*request.mutable_processors()->mutable_logit_bias())[999] = -100;
  absl::StatusOr<CheckedRequest> checked =
      ValidateGenerateRequest(request, TestModel(), {}, Defaults());
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(checked->processors.logit_bias().at(999), -100);
  EXPECT_EQ(checked->processors.repetition_penalty(), 2);
  EXPECT_EQ(checked->prompt_kind, PromptKind::kChat);
  ASSERT_EQ(checked->messages.size(), 1u);
  EXPECT_EQ(checked->messages[0].role, "user");
  EXPECT_TRUE(checked->add_generation_prompt);
  EXPECT_EQ(checked->max_tokens, 127);
  EXPECT_EQ(checked->seed, 42u);
  EXPECT_EQ(checked->deadline, absl::Milliseconds(1500));
  EXPECT_EQ(checked->stop_strings, std::vector<std::string>{"\n\n"});
  EXPECT_EQ(checked->stop_token_ids, std::vector<int32_t>{999});
  EXPECT_EQ(checked->policy.branch.width, 64);
  EXPECT_EQ(checked->policy.mode, entropix::PolicyMode::kCanonical);
  EXPECT_EQ(checked->policy.insert.tokens, std::vector<int32_t>{999});  // The request's.

  GenerateRequest tokens;
  tokens.mutable_tokens()->add_token_ids(0);
  tokens.mutable_tokens()->add_token_ids(999);
  checked = ValidateGenerateRequest(tokens, TestModel(), {}, Defaults());
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(checked->prompt_kind, PromptKind::kTokens);
  EXPECT_EQ(checked->prompt_token_ids, (std::vector<int32_t>{0, 999}));
  EXPECT_EQ(checked->deadline, absl::InfiniteDuration());
}

// The policy is resolved over the server's defaults at the edge, once: what the request leaves
// unset comes from them, TRACE's answer pattern arrives compiled, and a coordinator without a
// tokenizer (no default insert tokens) asks the request for them.
TEST(ValidateGenerateRequest, ResolvesThePolicyOverTheServerDefaults) {
  entropix::PolicyConfig defaults = Defaults();
  defaults.mode = entropix::PolicyMode::kTrace;
  defaults.trace.answer_pattern = R"((\d+)$)";
  defaults.branch.max_len = 9;
  GenerateRequest request = Valid();
  request.mutable_policy()->mutable_trace()->set_width(3);
  absl::StatusOr<CheckedRequest> checked =
      ValidateGenerateRequest(request, TestModel(), {}, defaults);
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(checked->policy.mode, entropix::PolicyMode::kTrace);
  EXPECT_EQ(checked->policy.trace.width, 3);
  EXPECT_EQ(checked->policy.branch.max_len, 9);
  EXPECT_EQ(checked->policy.insert.tokens, std::vector<int32_t>{7});
  ASSERT_NE(checked->answer_pattern, nullptr);

  request.mutable_policy()->mutable_trace()->set_answer_pattern("(unclosed");
  EXPECT_THAT(
      std::string(ValidateGenerateRequest(request, TestModel(), {}, defaults).status().message()),
      ::testing::StartsWith("policy.trace.answer_pattern: "));
  EXPECT_THAT(
      std::string(ValidateGenerateRequest(Valid(), TestModel(), {}, entropix::PolicyConfig{})
                      .status()
                      .message()),
      ::testing::StartsWith("policy.insert.tokens: required"));
}

TEST(ValidateGenerateRequest, ServerLimitCapsTopLogprobs) {
  GenerateRequest request = Valid();
  request.set_top_logprobs(9);
  ServerLimits limits;
  limits.max_top_logprobs = 8;
  EXPECT_EQ(ValidateGenerateRequest(request, TestModel(), limits, Defaults()).status().message(),
            "top_logprobs: 9 is outside [0, 8]");
}

TEST(ValidateGenerateRequest, ToolsAndCallsAreCopied) {
  GenerateRequest request;
  arbor::v1::ChatPrompt& chat = *request.mutable_chat();
  chat.add_messages()->set_role("user");
  auto* assistant = chat.add_messages();
  assistant->set_role("assistant");
  auto* call = assistant->add_tool_calls();
  call->set_name("get_weather");
  call->set_arguments(R"({"city": "Paris"})");
  chat.add_messages()->set_role("tool");
  chat.add_tools(R"({"type": "function", "function": {"name": "get_weather"}})");
  chat.set_add_generation_prompt(true);
  chat.set_open_tool_call(true);
  absl::StatusOr<CheckedRequest> checked =
      ValidateGenerateRequest(request, TestModel(), ServerLimits(), Defaults());
  ASSERT_TRUE(checked.ok()) << checked.status();
  ASSERT_EQ(checked->messages.size(), 3u);
  ASSERT_EQ(checked->messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(checked->messages[1].tool_calls[0].arguments(), R"({"city": "Paris"})");
  EXPECT_EQ(checked->tools, std::vector<std::string>{chat.tools(0)});
  EXPECT_TRUE(checked->open_tool_call);
}

TEST(ValidateGenerateRequest, PromptBytesAreBoundedBeforeTokenizing) {
  ServerLimits limits;
  limits.max_prompt_bytes = 10;
  GenerateRequest request;
  request.set_text(std::string(11, 'a'));
  EXPECT_EQ(ValidateGenerateRequest(request, TestModel(), limits, Defaults()).status().message(),
            "text: 11 bytes of text; at most 10 (the server's --max_prompt_bytes)");
  request.set_text(std::string(10, 'a'));
  EXPECT_TRUE(ValidateGenerateRequest(request, TestModel(), limits, Defaults()).ok());
  GenerateRequest chat;
  for (int i = 0; i < 2; ++i) {
    auto* message = chat.mutable_chat()->add_messages();
    message->set_role("user");
    message->set_content(std::string(6, 'a'));
  }
  EXPECT_EQ(ValidateGenerateRequest(chat, TestModel(), limits, Defaults()).status().message(),
            "chat.messages: 12 bytes of text; at most 10 (the server's --max_prompt_bytes)");
}

TEST(ValidateGenerateRequest, UnknownModelIsAPreconditionFailure) {
  EXPECT_EQ(
      ValidateGenerateRequest(Valid(), arbor::v1::ModelInfo(), {}, Defaults()).status().code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST(ResolveMaxTokens, DefaultsAndContextLimits) {
  CheckedRequest request;
  ServerLimits limits;
  limits.default_max_tokens = 256;
  EXPECT_EQ(*ResolveMaxTokens(request, 100, TestModel(), limits), 28);  // Capped by the room.
  limits.default_max_tokens = 10;
  EXPECT_EQ(*ResolveMaxTokens(request, 100, TestModel(), limits), 10);
  request.max_tokens = 28;
  EXPECT_EQ(*ResolveMaxTokens(request, 100, TestModel(), limits), 28);
  request.max_tokens = 29;
  EXPECT_EQ(ResolveMaxTokens(request, 100, TestModel(), limits).status().message(),
            "max_tokens: 29 is outside [1, 28] (context 128 - prompt 100 tokens)");
  absl::Status no_room = ResolveMaxTokens(request, 128, TestModel(), limits).status();
  EXPECT_EQ(no_room.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_room.message().substr(0, 7), "prompt:");
}

TEST(OtherRequests, JobIdsListsAndTrees) {
  EXPECT_EQ(ValidateJobId("", "job_id").message(), "job_id: must not be empty");
  EXPECT_FALSE(ValidateJobId(std::string(129, 'j'), "job_id").ok());
  EXPECT_TRUE(ValidateJobId("job-1", "job_id").ok());

  arbor::v1::ListJobsRequest list;
  list.set_limit(1001);
  EXPECT_EQ(ValidateListJobsRequest(list).message().substr(0, 6), "limit:");
  list.set_limit(0);
  list.add_states(static_cast<arbor::v1::JobState>(42));
  EXPECT_EQ(ValidateListJobsRequest(list).message().substr(0, 10), "states[0]:");
  list.clear_states();
  list.add_states(arbor::v1::JOB_STATE_RUNNING);
  EXPECT_TRUE(ValidateListJobsRequest(list).ok());
  list.set_owner(std::string(257, 'o'));
  EXPECT_EQ(ValidateListJobsRequest(list).message().substr(0, 6), "owner:");
  list.set_owner("alice");
  list.set_model(std::string(257, 'm'));
  EXPECT_EQ(ValidateListJobsRequest(list).message().substr(0, 6), "model:");
  list.set_model("tiny");
  list.set_created_before_unix_ms(-1);
  EXPECT_EQ(ValidateListJobsRequest(list).message().substr(0, 23), "created_before_unix_ms:");
  list.set_created_before_unix_ms(2000);
  list.set_created_after_unix_ms(1000);
  EXPECT_TRUE(ValidateListJobsRequest(list).ok());

  arbor::v1::GetTreeRequest tree;
  EXPECT_EQ(ValidateGetTreeRequest(tree).message().substr(0, 7), "job_id:");
  tree.set_job_id("j");
  tree.set_root(-1);
  EXPECT_EQ(ValidateGetTreeRequest(tree).message().substr(0, 5), "root:");
  tree.set_root(0);
  tree.set_max_depth(-1);
  EXPECT_EQ(ValidateGetTreeRequest(tree).message().substr(0, 10), "max_depth:");
  tree.set_max_depth(3);
  EXPECT_TRUE(ValidateGetTreeRequest(tree).ok());
}

TEST(IsValidUtf8, AcceptsWellFormedRejectsMalformed) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9\xE2\x9C\x93\xF0\x9F\x8C\xB3"));  // é ✓ 🌳
  EXPECT_FALSE(IsValidUtf8("\x80"));                                 // Lone continuation.
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));                         // Overlong.
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));                     // Above U+10FFFF.
  EXPECT_FALSE(IsValidUtf8("\xF8\x88\x80\x80\x80"));                 // 5-byte form.
}

}  // namespace
}  // namespace arbor::coordinator
