"""The same job grows the same search tree cold, under load and warm, on either worker.

Two real arbor-workers (a random `small` checkpoint served as Q8_0 with 8-bit activations, so the
quantized kernels run) behind a real arbor-coordinator. A sampled, branching SEARCH job, a
CANONICAL one and one of plain sampling run alone first; then `POST /v1/jobs/{id}/replay` runs
each request again while 31 other jobs (other prompts, seeds and policies) share the workers'
steps with them — other rows in their matmuls, other sequences in their batches — and once more
when the prefix cache holds their prompt. Every replay
must be identical node for node (the worker's default --numerics=invariant). Run by ctest with
the project virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, start_http_cluster  # noqa: E402

SEARCH = {"mode": "POLICY_MODE_SEARCH", "branch": {"width": 3, "maxLen": 6}}
CANONICAL = {"mode": "POLICY_MODE_CANONICAL"}
SAMPLING = {"mode": "POLICY_MODE_SEARCH", "sampling": {"temperature": 1.0},
            "thresholds": {"lelvEntropy": 0, "lelvVarentropy": 0, "helvEntropy": 64,
                           "lehvVarentropy": 4096, "hehvEntropy": 64, "hehvVarentropy": 4096}}


class ReplayUnderLoadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-replay-")
        cls.addClassCleanup(cls.processes.stop)
        cls.base = start_http_cluster(cls.processes, preset="small", workers=2,
                                      worker_flags=("--weights_dtype=q8_0", "--threads=2"))

    def complete(self, prompt, seed, policy, max_tokens=40):
        status, body = http_json(self.base + "/v1/completions", {
            "prompt": prompt, "max_tokens": max_tokens, "seed": seed,
            "arbor": {"policy": policy, "ignore_eos": True}}, timeout=300)
        self.assertEqual(status, 200, body)
        return body["arbor"]["job_id"]

    def replay(self, job_id, body=None):
        status, result = http_json(f"{self.base}/v1/jobs/{job_id}/replay", body or {},
                                   timeout=300)
        self.assertEqual(status, 200, result)
        return result

    def test_a_changed_policy_departs_and_a_bad_one_is_refused(self):
        job_id = self.complete("The river bends", 7, SEARCH)
        changed = self.replay(job_id, {"policy": {"sampling": {"temperature": 5.0}}})
        self.assertTrue(changed["policy_changed"], changed)
        self.assertFalse(changed["identical"], changed)
        self.assertTrue(changed["difference"], changed)
        _, replayed = http_json(f"{self.base}/v1/jobs/{changed['replay_job_id']}")
        policy = replayed["request"]["policy"]
        self.assertAlmostEqual(policy["sampling"]["temperature"], 5.0)
        self.assertEqual((policy["mode"], policy["branch"]["width"], policy["branch"]["max_len"]),
                         ("POLICY_MODE_SEARCH", 3, 6), "the rest as the job ran it")
        for body, field in [({"policy": {"branch": {"width": 1}}}, "policy.branch.width"),
                            ({"policy": {"nope": 1}}, "policy"),
                            ({"seed": 3}, "seed")]:
            status, refused = http_json(f"{self.base}/v1/jobs/{job_id}/replay", body)
            self.assertEqual(status, 400, refused)
            self.assertIn(field, refused["error"]["message"])

    def test_cold_under_load_and_warm_trees_are_identical(self):
        # Long enough to fill whole KV blocks, which the prefix cache keeps.
        prompt = "The old lighthouse keeper climbed the stairs every evening " * 6
        jobs = {name: self.complete(prompt, 99 + i, policy)
                for i, (name, policy) in enumerate(
                    [("search", SEARCH), ("canonical", CANONICAL), ("sampling", SAMPLING)])}
        _, searched = http_json(f"{self.base}/v1/jobs/{jobs['search']}")
        self.assertGreater(int(searched["usage"].get("explored_tokens", 0)), 0, "it branched")

        others = [threading.Thread(target=self.complete,
                                   args=(f"Story number {i} begins", 1000 + i,
                                         SEARCH if i % 2 else CANONICAL, 200))
                  for i in range(31)]
        for thread in others:
            thread.start()
        loaded = {name: self.replay(job_id) for name, job_id in jobs.items()}
        for thread in others:
            thread.join()
        for name, result in loaded.items():
            self.assertTrue(result["identical"], (name, result))

        cached = {}
        for name, job_id in jobs.items():
            warm = self.replay(job_id)
            self.assertTrue(warm["identical"], (name, warm))
            _, again = http_json(f"{self.base}/v1/jobs/{warm['replay_job_id']}")
            cached[name] = int(again["usage"].get("cached_prompt_tokens", 0))
        self.assertGreater(max(cached.values()), 0,
                           ("a warm replay read its prompt from the prefix cache", cached))

if __name__ == "__main__":
    unittest.main()
