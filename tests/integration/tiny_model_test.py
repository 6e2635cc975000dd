"""`--model=tiny` on arbor-worker and arbor-coordinator, as on `arbor up`: the random-weight
preset is made on the spot into the cache, and a cluster started on it answers text prompts.

The cache ($XDG_CACHE_HOME) is a fresh folder, so the first process to start makes the model
and the second finds it there.
"""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from arbor_processes import BIN, Processes, http_json, wait_ready  # noqa: E402  (path set above)


class TinyModelTest(unittest.TestCase):

    def setUp(self):
        self.processes = Processes(prefix="arbor-tiny-")
        self.addCleanup(self.processes.stop)
        self.cache = os.path.join(self.processes.dir, "cache")
        os.environ["XDG_CACHE_HOME"] = self.cache  # Inherited by the started processes.

    def test_worker_and_coordinator_take_tiny(self):
        [worker] = self.processes.start("arbor-worker", "--model=tiny", "--threads=1",
                                        "--kv_tokens=4096", "--listen=127.0.0.1:0")
        self.assertTrue(os.path.isdir(os.path.join(self.cache, "arbor", "models")))
        grpc_port, port = self.processes.start(
            "arbor-coordinator", "--model=tiny", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", f"--workers=127.0.0.1:{worker}",
            port_flags=("--port_file", "--http_port_file"))
        base = f"http://127.0.0.1:{port}"
        wait_ready(base)
        status, answer = http_json(base + "/v1/completions",
                                   {"model": "tiny", "prompt": "Once upon a time",
                                    "max_tokens": 4, "temperature": 0})
        self.assertEqual(status, 200, answer)
        self.assertEqual(answer["usage"]["completion_tokens"], 4)
        self.assertIsInstance(answer["choices"][0]["text"], str)
        self.assertGreater(answer["usage"]["prompt_tokens"], 0)
        # `arbor workers` shows the worker's KV in tokens and bytes, as it reports them.
        workers = subprocess.run([os.path.join(BIN, "arbor"), "workers",
                                  f"--coordinator=127.0.0.1:{grpc_port}"],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(workers.returncode, 0, workers.stderr)
        self.assertRegex(workers.stdout,
                         r" [0-9,]+/4,096 tokens \([0-9.]+ [KMG]?i?B/[0-9.]+ [KMG]iB\) ")

    def test_unknown_model_name_says_what_is_known(self):
        self.processes.start("arbor-worker", "--model=tinyy", "--listen=127.0.0.1:0",
                             port_flags=())
        process = self.processes.processes[0]
        self.assertNotEqual(process.wait(timeout=30), 0)
        self.assertIn("smollm2-135m-instruct", self.processes.log(0))


if __name__ == "__main__":
    unittest.main()
