"""Workers of another model than the coordinator's never take a job, with real processes.

A worker serving the random `tiny` preset beside a coordinator of the `small` preset is refused
at registration with a message naming both models, and a statically listed one is never made
ready (`arbor workers` says why); every request, token ids past tiny's vocabulary included, is
served by the right worker. Run by ctest with the project virtualenv; ARBOR_BINARY_DIR points at
the build.
"""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import BIN, Processes, http_json, wait_for_log, wait_ready  # noqa: E402


class MismatchedWorkerTest(unittest.TestCase):
    def setUp(self):
        self.processes = Processes()
        self.small = self.processes.make_model("small")
        self.tiny = self.processes.make_model("tiny")

    def tearDown(self):
        self.processes.stop()

    def start_worker(self, model, *flags):
        return self.processes.start("arbor-worker", f"--model={model}", "--listen=127.0.0.1:0",
                                    "--kv_tokens=4096", *flags)[0]

    def start_coordinator(self, *flags):
        _, http = self.processes.start(
            "arbor-coordinator", f"--model={self.small}", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", "--heartbeat_ms=200", *flags,
            port_flags=("--port_file", "--http_port_file"))
        return f"http://127.0.0.1:{http}"

    def grpc_port(self, index):
        """The gRPC port process `index` (a coordinator) bound."""
        with open(os.path.join(self.processes.dir, f"{index}port_file")) as f:
            return int(f.read())

    def assert_every_request_served(self, base):
        # Token ids past tiny's vocabulary (512): a request routed to it would fail.
        for prompt in ([1500, 1600, 1700, 2000], "Once upon a time") * 3:
            status, body = http_json(base + "/v1/completions", {
                "prompt": prompt, "max_tokens": 4, "arbor": {"policy_name": "greedy"}})
            self.assertEqual(status, 200, body)

    def assert_names_both_models(self, message):
        self.assertIn("serves model 'tiny'", message)
        self.assertIn("this coordinator serves 'small'", message)

    def test_a_registering_worker_of_another_model_is_refused(self):
        good = self.start_worker(self.small)
        base = self.start_coordinator(f"--workers=127.0.0.1:{good}")
        coordinator = len(self.processes.processes) - 1
        self.start_worker(self.tiny, f"--coordinator=127.0.0.1:{self.grpc_port(coordinator)}")
        worker = len(self.processes.processes) - 1
        log = wait_for_log(self.processes, worker, "cannot register with coordinator")
        self.assert_names_both_models(log)
        self.assert_names_both_models(wait_for_log(self.processes, coordinator, "worker refused"))
        wait_ready(base)
        self.assert_every_request_served(base)
        self.assertNotIn("worker registered", self.processes.log(coordinator))

    def test_a_listed_worker_of_another_model_is_never_ready(self):
        good = self.start_worker(self.small)
        bad = self.start_worker(self.tiny)
        base = self.start_coordinator(f"--workers=127.0.0.1:{good},127.0.0.1:{bad}")
        coordinator = len(self.processes.processes) - 1
        self.assert_names_both_models(wait_for_log(self.processes, coordinator, "worker refused"))
        wait_ready(base)
        self.assert_every_request_served(base)
        self.assertEqual(self.processes.log(coordinator).count("worker is up"), 1)
        listed = subprocess.run([os.path.join(BIN, "arbor"), "workers",
                                 f"--coordinator=127.0.0.1:{self.grpc_port(coordinator)}"],
                                capture_output=True, text=True, check=True).stdout
        self.assertIn("refused: ", listed)
        self.assert_names_both_models(listed)


if __name__ == "__main__":
    unittest.main()
