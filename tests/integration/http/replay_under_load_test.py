"""The same job grows the same search tree cold, under load and warm, on either worker.

Two real arbor-workers (a random `small` checkpoint served as Q8_0 with 8-bit activations, so the
quantized kernels run) behind a real arbor-coordinator. A sampled, branching SEARCH job runs
alone first; then `POST /v1/jobs/{id}/replay` runs its request again while 31 other jobs (other
prompts, seeds and policies) share the workers' steps with it — other rows in its matmuls, other
sequences in its batches — and once more when the prefix cache holds its prompt. Every replay
must be identical node for node (the worker's default --numerics=invariant). Run by ctest with
the project virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import os
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import BIN, Processes, http_json, wait_ready  # noqa: E402

SEARCH = {"mode": "POLICY_MODE_SEARCH", "branch": {"width": 3, "maxLen": 6}}


class ReplayUnderLoadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-replay-")
        cls.addClassCleanup(cls.processes.stop)
        model = os.path.join(cls.processes.dir, "small")
        subprocess.run([os.path.join(BIN, "arbor"), "make-model", "--preset=small",
                        f"--out={model}"], check=True, capture_output=True)
        workers = [cls.processes.start("arbor-worker", f"--model={model}",
                                       "--listen=127.0.0.1:0", "--weights_dtype=q8_0",
                                       "--threads=2")[0] for _ in range(2)]
        _, port = cls.processes.start(
            "arbor-coordinator", f"--model={model}", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0",
            "--workers=" + ",".join(f"127.0.0.1:{w}" for w in workers),
            port_flags=("--port_file", "--http_port_file"))
        cls.base = f"http://127.0.0.1:{port}"
        wait_ready(cls.base)

    def complete(self, prompt, seed, policy, max_tokens=40):
        status, body = http_json(self.base + "/v1/completions", {
            "prompt": prompt, "max_tokens": max_tokens, "seed": seed,
            "arbor": {"policy": policy, "ignore_eos": True}}, timeout=300)
        self.assertEqual(status, 200, body)
        return body["arbor"]["job_id"]

    def replay(self, job_id):
        status, result = http_json(f"{self.base}/v1/jobs/{job_id}/replay", {}, timeout=300)
        self.assertEqual(status, 200, result)
        return result

    def test_cold_under_load_and_warm_trees_are_identical(self):
        # Long enough to fill whole KV blocks, which the prefix cache keeps.
        job_id = self.complete("The old lighthouse keeper climbed the stairs every evening " * 6,
                               99, SEARCH)
        _, job = http_json(f"{self.base}/v1/jobs/{job_id}")
        self.assertGreater(int(job["usage"].get("explored_tokens", 0)), 0, "the job branched")

        others = [threading.Thread(target=self.complete,
                                   args=(f"Story number {i} begins", 1000 + i,
                                         SEARCH if i % 2 else {"mode": "POLICY_MODE_CANONICAL"},
                                         200))
                  for i in range(31)]
        for thread in others:
            thread.start()
        loaded = self.replay(job_id)
        for thread in others:
            thread.join()
        self.assertTrue(loaded["identical"], loaded)

        warm = self.replay(job_id)
        self.assertTrue(warm["identical"], warm)
        _, again = http_json(f"{self.base}/v1/jobs/{warm['replay_job_id']}")
        self.assertGreater(int(again["usage"].get("cached_prompt_tokens", 0)), 0,
                           "the warm replay read its prompt from the prefix cache")
        self.assertEqual(again["text"], job["text"])


if __name__ == "__main__":
    unittest.main()
