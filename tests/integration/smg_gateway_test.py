"""Two coordinators on one job store behind the Shepherd Model Gateway (`smg`), real processes.

A PostgreSQL server started by the test holds the store; two arbor-coordinators (ids a and b)
share it and one arbor-worker on a random `tiny` checkpoint, each with its HTTP gateway; `smg
launch --policy cache_aware` stands in front of both HTTP ports, as users of vLLM and SGLang
deploy it. Through the gateway, with the official `openai` package: the model id it lists and
accepts is the coordinators' own; blocking and streamed chat completions and completions give
the text the same greedy request gets from a coordinator directly; a job id handed back through
the gateway is answered by both coordinators' GET /v1/jobs/{id} and tree once it has finished
(the store's), while the gateway itself does not carry those routes. Then a is SIGKILLed: the
gateway's health checks take it out and new requests go on through b. Last, the store stops:
b's /health turns 503 naming it, so the gateway (or Kubernetes) sends it nothing more. Run by
ctest with the project virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import os
import sys
import unittest

try:
    import openai
except ImportError as e:  # The dependency script installs it; without it nothing to test.
    print(f"{e.name} is not installed in this Python; skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from arbor_processes import Processes, http_json, wait_ready  # noqa: E402
import postgres_server  # noqa: E402
import smg_gateway  # noqa: E402
from smg_gateway import eventually, get  # noqa: E402

LEASE = ("--job_lease=2s", "--job_lease_renewal=400ms")
MAX_TOKENS = 12
# Greedy: the same text from any coordinator, directly or through the gateway.
GREEDY = {"max_tokens": MAX_TOKENS, "temperature": 0, "seed": 7}

if not smg_gateway.installed():
    print(f"{smg_gateway.SMG} is missing: scripts/install-deps.sh installs smg into the venv; "
          "skipping")
    sys.exit(77)
if postgres_server.find_binaries() is None:
    print("PostgreSQL's server binaries are absent (no /usr/lib/postgresql/N/bin/initdb): "
          "install the postgresql package (scripts/install-deps.sh); skipping")
    sys.exit(77)


class SmgGatewayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Cleanups run last first: smg, then the coordinators, while the store still answers.
        cls.postgres = postgres_server.PostgresServer(postgres_server.find_binaries())
        cls.addClassCleanup(cls.postgres.stop)
        cls.processes = Processes(prefix="arbor-smg-")
        cls.addClassCleanup(cls.processes.stop)
        model = cls.processes.make_model("tiny")
        worker, = cls.processes.start("arbor-worker", f"--model={model}",
                                      "--listen=127.0.0.1:0", "--threads=1")
        cls.bases = {}
        cls.index = {}
        for coordinator_id in ("a", "b"):
            cls.index[coordinator_id] = len(cls.processes.processes)
            _, port = cls.processes.start(
                "arbor-coordinator", f"--model={model}", "--listen=127.0.0.1:0",
                "--http_listen=127.0.0.1:0", f"--workers=127.0.0.1:{worker}",
                f"--job_store=postgres:{cls.postgres.conninfo}",
                f"--coordinator_id={coordinator_id}", *LEASE,
                port_flags=("--port_file", "--http_port_file"))
            cls.bases[coordinator_id] = f"http://127.0.0.1:{port}"
            wait_ready(cls.bases[coordinator_id], timeout=60)
        cls.smg = smg_gateway.Gateway(cls.bases.values(),
                                      os.path.join(cls.processes.dir, "smg.log"))
        cls.addClassCleanup(cls.smg.stop)
        cls.gateway = cls.smg.base
        cls.client = openai.OpenAI(base_url=cls.gateway + "/v1", api_key="unused", timeout=60,
                                   max_retries=0)

    def direct(self, coordinator_id):
        return openai.OpenAI(base_url=self.bases[coordinator_id] + "/v1", api_key="unused",
                             timeout=60, max_retries=0)

    def chat(self, client, content, stream=False):
        """The text and job id of a greedy chat completion of `content`."""
        messages = [{"role": "user", "content": content}]
        if not stream:
            reply = client.chat.completions.create(model="tiny", messages=messages, **GREEDY)
            return reply.choices[0].message.content, reply.model_extra["arbor"]["job_id"]
        text, job_id = "", None
        for chunk in client.chat.completions.create(model="tiny", messages=messages,
                                                    stream=True, **GREEDY):
            if not chunk.choices:
                continue
            # A chunk names its choice's job (docs/HTTP.md, "Responses").
            job_id = job_id or (chunk.choices[0].model_extra.get("arbor") or {}).get("job_id")
            text += chunk.choices[0].delta.content or ""
        return text, job_id

    def complete(self, client, prompt, stream=False):
        """The text of a greedy completion of `prompt`."""
        if not stream:
            return client.completions.create(model="tiny", prompt=prompt,
                                             **GREEDY).choices[0].text
        return "".join(chunk.choices[0].text for chunk in client.completions.create(
            model="tiny", prompt=prompt, stream=True, **GREEDY) if chunk.choices)

    @staticmethod
    def finished_job(base, job_id):
        """GET /v1/jobs/{job_id} of the coordinator at `base` once it says FINISHED, else None:
        the holder writes the end to the store just after the client has its answer."""
        status, job = http_json(f"{base}/v1/jobs/{job_id}")
        return job if status == 200 and job.get("state") == "JOB_STATE_FINISHED" else None

    def test_1_the_gateway_serves_the_coordinators_model_id(self):
        for base in self.bases.values():
            self.assertEqual([m["id"] for m in http_json(base + "/v1/models")[1]["data"]],
                             ["tiny"])
        self.assertEqual([m.id for m in self.client.models.list()], ["tiny"])
        with self.assertRaises(openai.NotFoundError):
            self.client.chat.completions.create(
                model="another-model", messages=[{"role": "user", "content": "hi"}], **GREEDY)

    def test_2_completions_equal_a_coordinators_own(self):
        for i, prompt in enumerate(("Once upon a time", "The sky is", "Tiny trees")):
            want_chat = self.chat(self.direct("a"), prompt)[0]
            want_text = self.complete(self.direct("b"), prompt)
            self.assertTrue(want_chat and want_text, "the tiny model said something")
            for stream in (False, True):
                self.assertEqual(self.chat(self.client, prompt, stream)[0], want_chat,
                                 f"chat {i} stream={stream}")
                self.assertEqual(self.complete(self.client, prompt, stream), want_text,
                                 f"completion {i} stream={stream}")

    def test_3_a_job_through_the_gateway_is_answered_by_both_coordinators(self):
        for stream in (False, True):
            text, job_id = self.chat(self.client, "A job for the store", stream)
            self.assertTrue(job_id, "the reply names its Arbor job")
            for base in self.bases.values():
                job = eventually(lambda: self.finished_job(base, job_id), 30,
                                 f"job {job_id} finished on {base}")
                self.assertEqual(job["text"], text)
                status, tree = http_json(f"{base}/v1/jobs/{job_id}/tree")
                self.assertEqual(status, 200, tree)
                self.assertTrue(tree["nodes"], tree)
            trees = [http_json(f"{base}/v1/jobs/{job_id}/tree")[1] for base in self.bases.values()]
            self.assertEqual(len(trees[0]["nodes"]), len(trees[1]["nodes"]))
            # The gateway carries the OpenAI routes only: Arbor's own go to a coordinator.
            self.assertNotEqual(get(f"{self.gateway}/v1/jobs/{job_id}")[0], 200,
                                "smg now carries /v1/jobs: update docs/RELIABILITY.md")

    def test_4_the_gateway_keeps_serving_through_the_survivor(self):
        killed = self.processes.processes[self.index["a"]]
        killed.kill()
        killed.wait(timeout=30)
        # Right away too, before a probe has failed: prompts new to smg's cache tree, so that
        # cache_aware may pick either coordinator; one refused at connect is retried.
        for i in range(6):
            prompt = f"Right after the fall, {i}"
            self.assertEqual(self.chat(self.client, prompt)[0],
                             self.chat(self.direct("b"), prompt)[0])
        want = self.chat(self.direct("b"), "After the fall")[0]
        eventually(lambda: self.smg.healthy_backends() == 1, 30,
                   "smg taking the killed coordinator out")
        for stream in (False, True, False, True):
            text, job_id = self.chat(self.client, "After the fall", stream)
            self.assertEqual(text, want)
            self.assertTrue(eventually(lambda: self.finished_job(self.bases["b"], job_id), 30,
                                       f"job {job_id} finished on b"))
        self.assertEqual(self.complete(self.client, "After the fall"),
                         self.complete(self.direct("b"), "After the fall"))

        # A coordinator whose store does not answer is not ready: it could neither record new
        # jobs nor keep its leases, so its /health says so and the gateway stops routing to it.
        self.postgres.stop()
        health = self.bases["b"] + "/health"
        eventually(lambda: get(health)[0] == 503, 30, "b's /health turning 503, store down")
        self.assertIn("job store does not answer", get(health)[1])
        eventually(lambda: self.smg.healthy_backends() == 0, 30,
                   "smg taking the coordinator without a store out")


if __name__ == "__main__":
    unittest.main()
