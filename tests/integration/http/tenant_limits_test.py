"""Per-tenant limits from the token file, through the HTTP gateway of a real coordinator and worker.

The token file gives alice `jobs=1` and leaves bob unlimited. While alice's one long job runs
(1,500 tokens on a random `small` checkpoint, EOS ignored), her next request is refused with 429,
a Retry-After header and an OpenAI error naming the limit, and no job is made for it, while bob
is still served; a request of more choices than her limit allows is refused as such (400). Once
her job ends, she is served again. The refusals are counted per tenant on /metrics.
Run by ctest with the project virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import json
import os
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, start_http_cluster  # noqa: E402

TOKENS = {"alice": "a" * 32, "bob": "b" * 32}
LONG = {"prompt": "hi", "max_tokens": 1500,
        "arbor": {"ignore_eos": True, "policy_name": "greedy"}}
SHORT = {"prompt": "hi", "max_tokens": 2, "arbor": {"policy_name": "greedy"}}


def call(base, path, who, body=None, timeout=120):
    """GET `path`, or POST `body` as JSON, as token `who`; returns (status, headers, body)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {TOKENS[who]}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


class TenantLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-tenant-limits-")
        cls.addClassCleanup(cls.processes.stop)
        tokens = os.path.join(cls.processes.dir, "tokens")
        with open(tokens, "w") as f:
            f.write(f"{TOKENS['alice']} alice user jobs=1\n{TOKENS['bob']} bob user\n")
        cls.base = start_http_cluster(cls.processes, preset="small",
                                      worker_flags=("--threads=1",),
                                      coordinator_flags=(f"--auth_tokens_file={tokens}",))

    def jobs_of(self, who):
        status, _, body = call(self.base, "/v1/jobs", who)
        self.assertEqual(status, 200, body)
        return json.loads(body).get("jobs", [])

    def start_long_job(self):
        """Sends alice's long request on a thread; returns the thread and where its answer goes,
        once her job runs."""
        answer = {}
        thread = threading.Thread(
            target=lambda: answer.update(status=call(self.base, "/v1/completions", "alice",
                                                     LONG, timeout=600)[0]))
        thread.start()
        deadline = time.monotonic() + 30
        while not any(j["state"] == "JOB_STATE_RUNNING" for j in self.jobs_of("alice")):
            self.assertLess(time.monotonic(), deadline, "alice's job never ran")
            time.sleep(0.05)
        return thread, answer

    def test_a_tenant_at_its_limit_gets_429_while_others_are_served(self):
        thread, answer = self.start_long_job()
        jobs_before = len(self.jobs_of("alice"))
        status, headers, body = call(self.base, "/v1/completions", "alice", SHORT)
        self.assertEqual(status, 429, body)
        self.assertGreaterEqual(int(headers["Retry-After"]), 1)
        error = json.loads(body)["error"]
        self.assertIn("'alice' is at its limit of jobs: 1 in flight of jobs=1", error["message"])
        self.assertIn("type", error)
        self.assertEqual(len(self.jobs_of("alice")), jobs_before, "the refusal made no job")
        status, _, body = call(self.base, "/v1/completions", "bob", SHORT)
        self.assertEqual(status, 200, body)
        self.assertTrue(thread.is_alive(), "alice's job should still run while bob is served")
        thread.join(timeout=600)
        self.assertEqual(answer.get("status"), 200)
        status, _, body = call(self.base, "/v1/completions", "alice", SHORT)
        self.assertEqual(status, 200, f"the limit frees when the job ends: {body}")
        status, _, metrics = call(self.base, "/metrics", "alice")
        self.assertEqual(status, 200)
        self.assertIn('arbor_coordinator_tenant_rejections_total{tenant="alice"} ', metrics)
        self.assertNotIn('arbor_coordinator_tenant_rejections_total{tenant="bob"} 1', metrics)

    def test_more_choices_than_the_limit_allows_start_none(self):
        jobs_before = len(self.jobs_of("alice"))
        status, headers, body = call(self.base, "/v1/completions", "alice", {**SHORT, "n": 2})
        self.assertEqual(status, 400, body)
        self.assertIn("needs 2 jobs at once", json.loads(body)["error"]["message"])
        self.assertEqual(len(self.jobs_of("alice")), jobs_before, "no choice started")


if __name__ == "__main__":
    unittest.main()
