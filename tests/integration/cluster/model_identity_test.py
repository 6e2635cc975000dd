"""One server, however started: the coordinator's model decides its default policy and which
workers it takes, with real processes.

A bare arbor-coordinator given the real SmolLM2-135M-Instruct, by name or by the path of its file,
serves it with the policy evaluation chose and its fitted thresholds, and logs so (as `arbor up`
does). A worker serving another model (the random `tiny` preset beside a `small` coordinator) is
refused at registration with a message naming both, and a statically listed one is never made
ready; every request is then served by the right worker. Run by ctest with the project
virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import BIN, Processes, http_json, wait_ready  # noqa: E402

SMOLLM2 = "smollm2-135m-instruct"


def wait_for_log(processes, index, text, timeout=60.0):
    """The log of process `index` once it holds `text`; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while text not in processes.log(index):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} after {timeout} s in:\n{processes.log(index)}")
        time.sleep(0.1)
    return processes.log(index)


class KnownModelDefaultPolicyTest(unittest.TestCase):
    def setUp(self):
        self.processes = Processes()
        # The coordinator fetches the model as users' do; ARBOR_PYTHON is the pip it uses.
        os.environ.setdefault("ARBOR_PYTHON", sys.executable)

    def tearDown(self):
        self.processes.stop()

    def start_coordinator(self, *flags):
        index = len(self.processes.processes)
        try:
            self.processes.start("arbor-coordinator", "--listen=127.0.0.1:0", *flags)
        except RuntimeError:
            log = self.processes.log(index)
            if "pip" in log or "network" in log:
                self.skipTest(f"SmolLM2 is not cached and cannot be fetched:\n{log}")
            raise
        return wait_for_log(self.processes, index, "default policy:")

    def test_a_bare_coordinator_serves_smollm2_with_its_fitted_policy(self):
        log = self.start_coordinator(f"--model={SMOLLM2}")
        self.assertIn("default policy: cot_decoding", log)
        self.assertIn(f"with {SMOLLM2}'s fitted thresholds", log)
        self.assertIn(f"--model names the known model {SMOLLM2}", log)

    def test_the_smollm2_file_by_path_is_recognised_by_identity(self):
        self.start_coordinator(f"--model={SMOLLM2}")  # Fetched into the cache, if need be.
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        path = os.path.join(cache, "arbor", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
        log = self.start_coordinator(f"--model={path}")
        self.assertIn("default policy: cot_decoding", log)
        self.assertIn(f"is the known model {SMOLLM2} (same architecture, shape and tokenizer", log)

    def test_the_operators_policy_wins(self):
        log = self.start_coordinator(f"--model={SMOLLM2}", "--policy=search")
        self.assertIn("default policy: search (--policy)", log)

    def test_another_model_keeps_the_built_in_default(self):
        model = self.processes.make_model("tiny")
        log = self.start_coordinator(f"--model={model}")
        self.assertIn("default policy: entropix search (the built-in default)", log)
        self.assertIn("is no known model", log)


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
