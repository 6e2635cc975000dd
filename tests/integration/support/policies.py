"""Policies that force one structural decision at every step, for the integration tests.

Given as the JSON of arbor.v1.PolicyConfig (`arbor.policy` over HTTP).
"""

# Every row but BACKSPACE's is unreachable: each generated token after the first is re-drawn
# once, so streams are full of retractions that must never reach the client.
BACKSPACE_ALWAYS = {
    "mode": "POLICY_MODE_SEARCH",
    "thresholds": {"lelvEntropy": 0, "lelvVarentropy": 0, "helvEntropy": 64,
                   "lehvVarentropy": 4096, "hehvEntropy": 0, "hehvVarentropy": 0},
    "backspace": {"maxPerJob": 64},
}

# Every step with any uncertainty is LEHV: the search branches there (3 candidates, rollouts of
# up to 4 tokens) and keeps the best rollout.
BRANCH_ALWAYS = {
    "mode": "POLICY_MODE_SEARCH",
    "thresholds": {"lelvEntropy": 0, "lelvVarentropy": 0, "helvEntropy": 64,
                   "lehvEntropy": 64, "lehvVarentropy": 0},
    "branch": {"width": 3, "maxLen": 4},
}
