// The metrics against an independent PyTorch (float64) reference on fresh random inputs: logit
// rows up to the Llama-3 vocabulary, and attention score tensors in both EXACT and REFERENCE
// modes. The inputs go to a temporary JSON file; torch_reference.py prints its results.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "entropix/attention_metrics.h"
#include "entropix/logit_metrics.h"
#include "tests/support/test_seed.h"

namespace arbor::entropix {
namespace {

std::string RunReference(const nlohmann::json& input) {
  const std::string path =
      testing::TempDir() + "entropix_torch_input_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << input.dump();
  const std::string command = std::string(ARBOR_PYTHON) + " " + ARBOR_SOURCE_DIR +
                              "/tests/entropix/torch_reference.py " + path;
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  const int rc = ::pclose(pipe);
  std::remove(path.c_str());
  return rc == 0 ? output : "";
}

void ExpectClose(double got, double want, double tol, const std::string& what) {
  EXPECT_NEAR(got, want, tol * (1.0 + std::abs(want))) << what;
}

TEST(TorchReference, LogitAndAttentionMetricsMatch) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  nlohmann::json input;
  std::vector<std::vector<float>> rows;
  for (int n : {128256, 5000, 17}) {
    std::normal_distribution<float> normal(std::uniform_real_distribution<float>(-50, 50)(rng),
                                           std::uniform_real_distribution<float>(0.3f, 8)(rng));
    std::vector<float>& row = rows.emplace_back(n);
    for (float& x : row) x = normal(rng);
    input["logit_rows"].push_back(row);
  }
  struct Case {
    int heads, keys, reference_len;
    std::vector<float> scores;
  };
  std::vector<Case> cases;
  for (auto [heads, keys, reference_len] : {std::tuple{32, 4096, 4096}, std::tuple{32, 300, 4096},
                                            std::tuple{8, 1, 64}, std::tuple{5, 900, 512}}) {
    Case& c = cases.emplace_back(Case{heads, keys, reference_len, {}});
    std::normal_distribution<float> normal(0.0f,
                                           std::uniform_real_distribution<float>(0.5f, 5)(rng));
    for (int i = 0; i < heads * keys; ++i) c.scores.push_back(normal(rng));
    input["attention"].push_back(
        {{"heads", heads}, {"keys", keys}, {"reference_len", reference_len}, {"scores", c.scores}});
  }
  const std::string text = RunReference(input);
  ASSERT_FALSE(text.empty()) << "the PyTorch reference failed; run it with " << ARBOR_PYTHON;
  const nlohmann::json want = nlohmann::json::parse(text);

  for (size_t r = 0; r < rows.size(); ++r) {
    auto got = ComputeLogitMetrics(rows[r].data(), rows[r].size(), 8);
    ASSERT_TRUE(got.ok()) << got.status();
    const nlohmann::json& w = want["logit_rows"][r];
    const std::string what = "row " + std::to_string(r);
    ExpectClose(got->entropy, w["entropy"], 2e-5, what + " entropy");
    ExpectClose(got->varentropy, w["varentropy"], 2e-4, what + " varentropy");
    ExpectClose(got->logsumexp, w["logsumexp"], 1e-6, what + " logsumexp");
    for (int k = 0; k < 8 && k < static_cast<int>(rows[r].size()); ++k) {
      ExpectClose(got->top_k[k].logprob, w["top_logprobs"][k], 1e-5, what + " top-k");
    }
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    for (AttentionMode mode : {AttentionMode::kExact, AttentionMode::kReference}) {
      auto got =
          ComputeAttentionMetrics(c.scores.data(), c.heads, c.keys, c.keys, mode, c.reference_len);
      ASSERT_TRUE(got.ok()) << got.status();
      const bool exact = mode == AttentionMode::kExact;
      const nlohmann::json& w = want["attention"][i][exact ? "exact" : "reference"];
      const std::string what = "case " + std::to_string(i) + (exact ? " exact " : " reference ");
      ExpectClose(got->attn_entropy, w["attn_entropy"], 1e-5, what + "attn_entropy");
      ExpectClose(got->attn_varentropy, w["attn_varentropy"], 1e-4, what + "attn_varentropy");
      ExpectClose(got->attn_head_varentropy, w["attn_head_varentropy"], 1e-4,
                  what + "attn_head_varentropy");
      EXPECT_NEAR(got->agreement, w["agreement"].get<double>(),
                  1e-4 * w["agreement"].get<double>() + 1e-9)
          << what << "agreement";
      ExpectClose(got->interaction_strength, w["interaction_strength"], 1e-6, what + "IS");
    }
  }
}

}  // namespace
}  // namespace arbor::entropix
