"""A worker with little KV cache under searches wider than it holds, through real processes.

A search that branches 8 wide, nested twice, on a worker that holds 512 tokens used to wait on
its own rollouts' KV for five minutes and answer 503; it must shrink its search and finish. And
twelve long jobs at once on that worker must all finish (they take turns).
"""

import concurrent.futures
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, start_http_cluster  # noqa: E402

WIDE = {"mode": "POLICY_MODE_SEARCH",
        "thresholds": {"lelvEntropy": 0, "lelvVarentropy": 0, "helvEntropy": 64,
                       "lehvEntropy": 64, "lehvVarentropy": 0},
        "branch": {"width": 8, "maxLen": 64, "maxDepth": 2}}
GREEDY = {"mode": "POLICY_MODE_SEARCH", "thresholds": {"lelvEntropy": 64, "lelvVarentropy": 4096}}


class KvPressureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-kv-pressure-")
        cls.base = start_http_cluster(cls.processes,
                                      worker_flags=("--threads=1", "--kv_tokens=512"))

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def complete(self, seed, policy, max_tokens):
        return http_json(self.base + "/v1/completions", {
            "prompt": "Once upon a time " * 3, "max_tokens": max_tokens, "seed": seed,
            "arbor": {"ignore_eos": True, "policy": policy}}, timeout=120)

    def test_a_search_wider_than_the_cache_shrinks_and_finishes(self):
        start = time.monotonic()
        status, body = self.complete(1, WIDE, 64)
        self.assertEqual(status, 200, body)
        self.assertLess(time.monotonic() - start, 30)
        self.assertEqual(body["choices"][0]["finish_reason"], "length")
        self.assertEqual(body["usage"]["completion_tokens"], 64)
        status, events = http_json(f"{self.base}/v1/jobs/{body['arbor']['job_id']}/tree")
        self.assertEqual(status, 200)
        self.assertTrue(any(n["status"] == "PRUNED" for n in events["nodes"]))

    def test_more_long_jobs_than_the_cache_holds_all_finish(self):
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda i: self.complete(i, GREEDY, 300), range(12)))
        for status, body in answers:
            self.assertEqual(status, 200, body)
            self.assertEqual(body["usage"]["completion_tokens"], 300)


if __name__ == "__main__":
    unittest.main()
