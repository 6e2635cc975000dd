"""The outrank stop on the real SmolLM2-135M-Instruct under a bare coordinator's default policy
(CoT-decoding), over HTTP: on short arithmetic questions, whose greedy trace finishes after a
few tokens while a second trace would run on to the token limit, some trace stops once it can
no longer overtake the finished one (its note says so), and the search does less work; replayed
with trace.max_depth 2 (which turns the stop off and changes nothing else for CoT-decoding, whose
only fork is the first token's) every job commits the same tokens, and a plain replay gives the
same tree. The model is fetched into the cache as users' is (skipped without it and without
network).
"""

import os
import sys
import unittest

TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(TESTS, "integration", "support"))
from arbor_processes import Processes, http_json, start_smollm2_cluster  # noqa: E402

QUESTIONS = [f"What is {a} plus {b}?" for a, b in [(2, 3), (3, 4), (4, 3), (7, 3)]]
STOPPED = "stopped: could not overtake a finished trace"


class SearchOutrankTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-outrank-")
        cls.base = start_smollm2_cluster(cls.processes, ("--threads=2", "--kv_tokens=8192"))

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def call(self, path, body=None):
        """GET or POST `path`; the parsed answer, which must be a 200."""
        status, answer = http_json(self.base + path, body, timeout=120)
        self.assertEqual(status, 200, answer)
        return answer

    def test_stopped_traces_change_no_answer(self):
        stopped = 0
        for question in QUESTIONS:
            with self.subTest(question=question):
                answer = self.call("/v1/chat/completions",
                                   {"messages": [{"role": "user", "content": question}],
                                    "max_tokens": 64})
                job_id = answer["arbor"]["job_id"]
                tree = self.call(f"/v1/jobs/{job_id}/tree")
                notes = [node.get("branch_note", "") for node in tree["nodes"]]
                stopped += sum(STOPPED in note for note in notes)

                unstopped = self.call(f"/v1/jobs/{job_id}/replay",
                                      {"policy": {"trace": {"maxDepth": 2}}})
                self.assertTrue(unstopped["policy_changed"])
                mine = self.call(f"/v1/jobs/{job_id}")
                theirs = self.call(f"/v1/jobs/{unstopped['replay_job_id']}")
                self.assertEqual(mine["token_ids"], theirs["token_ids"], "the same answer")
                self.assertLessEqual(int(mine["usage"].get("explored_tokens", 0)),
                                     int(theirs["usage"].get("explored_tokens", 0)))
                self.assertTrue(self.call(f"/v1/jobs/{job_id}/replay", {})["identical"])
        self.assertGreater(stopped, 0, "no trace stopped on questions made for it")


if __name__ == "__main__":
    unittest.main()
