"""A completion whose client goes away cancels its jobs, and the worker stops computing for them.

A real arbor-coordinator and arbor-worker on a random `small` checkpoint (slow enough that four
1,500-token choices take seconds). The client sends a blocking request, closes the connection
half a second later, and every job must end CANCELLED within a few seconds, short of its
max_tokens; then the worker's CPU (from /proc) must fall idle within half a second, under every
kind of policy: plain choices, a trace search (CoT-decoding) and a wide branching search. Before,
the coordinator reported CANCELLED while the worker went on computing the Run it had been sent.
Run by ctest with the project virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import json
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, start_http_cluster  # noqa: E402

MAX_TOKENS = 1500
# Branches at every uncertain step into 32 rollouts of up to 1,024 tokens, nested twice.
WIDE_SEARCH = {
    "mode": "POLICY_MODE_SEARCH",
    "thresholds": {"lelvEntropy": 0, "lelvVarentropy": 0, "helvEntropy": 64,
                   "lehvEntropy": 64, "lehvVarentropy": 0},
    "branch": {"width": 32, "maxLen": 1024, "maxDepth": 2},
}


class AbandonedRequestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-abandoned-")
        cls.addClassCleanup(cls.processes.stop)
        cls.base = start_http_cluster(cls.processes, preset="small", worker_flags=("--threads=1",))
        cls.port = int(cls.base.rsplit(":", 1)[1])

    def jobs(self):
        status, answer = http_json(self.base + "/v1/jobs")
        self.assertEqual(status, 200, answer)
        return answer.get("jobs", [])

    def worker_cpu_seconds(self):
        """User + system CPU time the worker process has used so far."""
        pid = self.processes.processes[0].pid  # start_http_cluster starts the worker first.
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def abandon(self, request, jobs):
        """Sends `request` to /v1/completions, hangs up half a second later, and waits until its
        `jobs` jobs have ended; returns them."""
        body = json.dumps(request).encode()
        head = ("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        before = {job["job_id"] for job in self.jobs()}
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(head + body)
            time.sleep(0.5)
        deadline = time.monotonic() + 5.0
        while True:
            mine = [job for job in self.jobs() if job["job_id"] not in before]
            if len(mine) == jobs and all(job["state"] != "JOB_STATE_RUNNING" and
                                         job["state"] != "JOB_STATE_QUEUED" for job in mine):
                return mine
            self.assertLess(time.monotonic(), deadline, f"jobs still running: {mine}")
            time.sleep(0.1)

    def assert_worker_falls_idle(self):
        """Within half a second of the cancel the worker computes nothing more: over the next
        second it uses under a tenth of a core (a Run left going would use all of it)."""
        time.sleep(0.5)
        start = self.worker_cpu_seconds()
        time.sleep(1.0)
        used = self.worker_cpu_seconds() - start
        self.assertLess(used, 0.1, f"the worker used {used:.2f} s of CPU after the cancel")

    def check_abandoned(self, request, jobs):
        for job in self.abandon(request, jobs):
            self.assertEqual(job["finish_reason"], "FINISH_REASON_CANCELLED", job)
            self.assertLess(int(job["usage"].get("generated_tokens", 0)), MAX_TOKENS, job)
        self.assert_worker_falls_idle()
        # The server goes on serving.
        status, _ = http_json(self.base + "/v1/completions", {"prompt": "hi", "max_tokens": 2})
        self.assertEqual(status, 200)

    def test_closing_the_connection_cancels_every_choice(self):
        self.check_abandoned({"prompt": "hi", "max_tokens": MAX_TOKENS, "n": 4,
                              "arbor": {"ignore_eos": True, "policy_name": "greedy"}}, jobs=4)

    def test_an_abandoned_trace_search_stops_on_the_worker(self):
        self.check_abandoned({"prompt": "hi", "max_tokens": MAX_TOKENS,
                              "arbor": {"ignore_eos": True, "policy_name": "cot_decoding"}},
                             jobs=1)

    def test_an_abandoned_branching_search_stops_on_the_worker(self):
        self.check_abandoned({"prompt": "hi", "max_tokens": MAX_TOKENS,
                              "arbor": {"ignore_eos": True, "policy": WIDE_SEARCH}}, jobs=1)


if __name__ == "__main__":
    unittest.main()
