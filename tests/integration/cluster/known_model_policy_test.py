"""A bare coordinator serves a known model with its fitted policy, with real processes.

Given the real SmolLM2-135M-Instruct, by name or by the path of its file, arbor-coordinator serves
it with the policy evaluation chose and its fitted thresholds and logs so, as `arbor up` does;
the operator's --policy wins, and another model keeps the built-in default. Its HTTP model id is
the known model's name even under another file name (a deployment's /models/current), so that
coordinators behind one gateway agree with `arbor up`. Run by ctest with the
project virtualenv; ARBOR_BINARY_DIR points at the build. The model is fetched once into the
cache, like users' (skipped without network).
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, wait_for_log  # noqa: E402

SMOLLM2 = "smollm2-135m-instruct"


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

    def test_the_http_model_id_is_the_known_models_name_whatever_the_file_is_called(self):
        self.start_coordinator(f"--model={SMOLLM2}")  # Fetched into the cache, if need be.
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        current = os.path.join(self.processes.dir, "current")
        os.symlink(os.path.join(cache, "arbor", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"),
                   current)
        _, port = self.processes.start("arbor-coordinator", "--listen=127.0.0.1:0",
                                       f"--model={current}", "--http_listen=127.0.0.1:0",
                                       port_flags=("--port_file", "--http_port_file"))
        status, models = http_json(f"http://127.0.0.1:{port}/v1/models")
        self.assertEqual((status, [m["id"] for m in models["data"]]), (200, [SMOLLM2]), models)

    def test_the_operators_policy_wins(self):
        log = self.start_coordinator(f"--model={SMOLLM2}", "--policy=search")
        self.assertIn("default policy: search (--policy)", log)

    def test_another_model_keeps_the_built_in_default(self):
        model = self.processes.make_model("tiny")
        log = self.start_coordinator(f"--model={model}")
        self.assertIn("default policy: entropix search (the built-in default)", log)
        self.assertIn("is no known model", log)


if __name__ == "__main__":
    unittest.main()
