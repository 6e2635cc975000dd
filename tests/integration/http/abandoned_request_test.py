"""A blocking completion whose client goes away cancels its jobs, as a stream's does.

A real arbor-coordinator and arbor-worker on a random `small` checkpoint (slow enough that four
1,500-token choices take seconds). The client sends a blocking request for them, closes the
connection half a second later, and every job must end CANCELLED within a few seconds, short of
its max_tokens; before, they ran to the end for nobody. Run by ctest with the project
virtualenv; ARBOR_BINARY_DIR points at the build.
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

    def test_closing_the_connection_cancels_every_choice(self):
        body = json.dumps({"prompt": "hi", "max_tokens": MAX_TOKENS, "n": 4,
                           "arbor": {"ignore_eos": True}}).encode()
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
            if len(mine) == 4 and all(job["state"] != "JOB_STATE_RUNNING" and
                                      job["state"] != "JOB_STATE_QUEUED" for job in mine):
                break
            self.assertLess(time.monotonic(), deadline, f"jobs still running: {mine}")
            time.sleep(0.1)
        for job in mine:
            self.assertEqual(job["finish_reason"], "FINISH_REASON_CANCELLED", job)
            self.assertLess(int(job["usage"].get("generated_tokens", 0)), MAX_TOKENS, job)
        # The server goes on serving.
        status, _ = http_json(self.base + "/v1/completions", {"prompt": "hi", "max_tokens": 2})
        self.assertEqual(status, 200)


if __name__ == "__main__":
    unittest.main()
