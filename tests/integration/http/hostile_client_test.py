"""Hostile HTTP clients against a real arbor-coordinator and arbor-worker.

Each attack (bodies nested deep, chunked bodies over the size limit, bodies sent slowly or
abandoned half-way, headers sent a byte at a time on more connections than the gateway keeps
threads for, with and without a token) must be answered with the right status, and
throughout it the coordinator must stay up and answer GET /health within 1 s. Run by ctest with
the project virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import os
import sys
import json
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, start_http_cluster  # noqa: E402
from hostile_http import (HealthWatch, chunked, crawl_headers, deep_body,  # noqa: E402
                          post_head, raw_request)

MAX_BODY = 256 * 1024  # Room for the 200 KB deeply nested body.
TOKEN = "0123456789abcdef0123456789abcdef"


class HostileClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-hostile-")
        tokens = os.path.join(cls.processes.dir, "tokens")
        with open(tokens, "w") as f:
            f.write(f"{TOKEN} alice user\n")
        cls.base = start_http_cluster(
            cls.processes, worker_flags=("--threads=1",),
            coordinator_flags=(f"--http_max_body_bytes={MAX_BODY}", f"--auth_tokens_file={tokens}"))
        # /health is the gateway's own probe: it answers without a token.
        cls.port = int(cls.base.rsplit(":", 1)[1])

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def setUp(self):
        self.watch = HealthWatch(self.base)

    def tearDown(self):
        self.watch.finish()
        self.assertTrue(self.processes.alive(), "a process died")
        self.assertEqual(self.watch.failures, [])
        self.assertLess(self.watch.slowest, 1.0)

    def test_deep_nesting_is_refused_without_crashing(self):
        body = deep_body(100000)
        # Without a token the body is never parsed; with one, its depth is refused.
        self.assertEqual(raw_request(self.port, post_head(len(body)) + body), 401)
        self.assertEqual(raw_request(self.port, post_head(len(body), TOKEN) + body), 400)

    def test_chunked_bodies_are_bounded_while_reading(self):
        big = b'{"prompt":"' + b"x" * (4 * MAX_BODY) + b'"}'
        self.assertEqual(raw_request(self.port, post_head(token=TOKEN), chunked(big)), 413)
        self.assertEqual(raw_request(self.port, post_head(len(big), TOKEN) + big), 413)
        # Anonymous callers are refused before their body is read at all.
        self.assertEqual(raw_request(self.port, post_head(), chunked(big)), 401)
        small = b'{"prompt":"hi","max_tokens":1}'
        self.assertEqual(raw_request(self.port, post_head(token=TOKEN), chunked(small)), 200)

    def test_slow_and_abandoned_bodies(self):
        body = b'{"prompt":"hi","max_tokens":1}'
        threads = [threading.Thread(target=raw_request, daemon=True,
                                    args=(self.port, post_head(token=TOKEN),
                                          [bytes([b]) for b in body[:-1]], 0.1, False))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(raw_request(self.port, post_head(len(body), TOKEN) + body), 200)

    def test_slow_headers_do_not_starve_other_callers(self):
        # More connections than the gateway keeps threads for (--http_threads, 64), each sending
        # its request line and headers a byte at a time (slowloris); /health keeps answering.
        head = post_head(token=TOKEN)
        stop = threading.Event()
        threads = [threading.Thread(target=crawl_headers, args=(self.port, head, stop),
                                    daemon=True) for _ in range(100)]
        for t in threads:
            t.start()
        time.sleep(3.0)  # The watch polls /health throughout (tearDown checks it).
        status, _ = http_json(self.base + "/health", timeout=1.0)
        self.assertEqual(status, 200)
        stop.set()
        for t in threads:
            t.join()

    def post(self, body, token=TOKEN):
        """POSTs `body` to /v1/completions; returns (status, parsed answer, headers)."""
        request = urllib.request.Request(
            self.base + "/v1/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, json.loads(r.read()), r.headers
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read()), e.headers

    def test_extreme_penalties_keep_logits_finite(self):
        # Dividing a positive logit by 1e-38 (or float's smallest, 1e-45) overflowed to +inf, and
        # the job failed with 503.
        prompt = "the cat sat on the mat and the dog sat on the log " * 4
        for penalties in ({"repetition_penalty": 1e-45}, {"repetition_penalty": 1e-38},
                          {"repetition_penalty": 2},
                          {"repetition_penalty": 1e-45, "frequency_penalty": -2,
                           "presence_penalty": -2, "logit_bias": {"5": 100}}):
            status, answer, _ = self.post({"prompt": prompt, "max_tokens": 8, **penalties})
            self.assertEqual(status, 200, (penalties, answer))
            self.assertEqual(len(answer["choices"]), 1)

    def test_stop_strings_cut_structured_output_only_where_it_parses(self):
        # Stop strings that occur inside any JSON document: they count only where the document
        # is complete, so a structured answer that ends with "stop" always parses.
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                  "required": ["ok"], "additionalProperties": False}
        formats = ({"type": "json_object"},
                   {"type": "json_schema", "json_schema": {"name": "t", "schema": schema}})
        for i, response_format in enumerate(formats * 3):
            status, answer, _ = self.post({"prompt": "JSON:", "max_tokens": 200, "seed": i + 1,
                                           "stop": ["\"", ":", "{", "\n"],
                                           "response_format": response_format})
            self.assertEqual(status, 200, answer)
            choice = answer["choices"][0]
            if choice["finish_reason"] == "length":
                continue  # Cut by max_tokens: no stop string was involved.
            self.assertEqual(choice["finish_reason"], "stop")
            json.loads(choice["text"])  # Raises on a document cut short.

    def timed_post(self, body):
        """POSTs `body` as compact JSON; returns (status, parsed answer, seconds taken)."""
        request = urllib.request.Request(
            self.base + "/v1/completions", data=json.dumps(body, separators=(",", ":")).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"})
        start = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=120) as r:
                return r.status, json.loads(r.read()), time.monotonic() - start
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read()), time.monotonic() - start

    def test_wide_schema_finishes_fast_and_does_not_stall_another_client(self):
        # 20,000 optional properties (within the body and schema limits): each mask once cost
        # the vocabulary times every name on the worker's decode thread, for seconds a token,
        # and every other request on that worker waited.
        properties = {f"f{i}": {} for i in range(20000)}
        wide = {"prompt": "JSON:", "max_tokens": 14, "temperature": 0,
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "wide", "schema": {"type": "object", "properties": properties}}}}
        short = {"prompt": "hi", "max_tokens": 2, "temperature": 0}
        unloaded = min(self.timed_post(short)[2] for _ in range(3))
        results = {}
        thread = threading.Thread(target=lambda: results.update(wide=self.timed_post(wide)))
        thread.start()
        time.sleep(0.05)
        status, answer, loaded = self.timed_post(short)
        thread.join()
        self.assertEqual(status, 200, answer)
        wide_status, wide_answer, wide_seconds = results["wide"]
        self.assertEqual(wide_status, 200, wide_answer)
        self.assertLess(wide_seconds, 10.0)
        self.assertLess(loaded, 5 * unloaded + 2.0, f"unloaded {unloaded:.3f} s")

    def test_const_integers_beyond_two_to_the_64_are_generated_exactly(self):
        big = 12345678901234567890123
        schema = {"type": "object", "properties": {"n": {"type": "integer", "const": big}},
                  "required": ["n"], "additionalProperties": False}
        status, answer, _ = self.timed_post(
            {"prompt": "JSON:", "max_tokens": 200, "temperature": 0,
             "response_format": {"type": "json_schema",
                                 "json_schema": {"name": "big", "schema": schema}}})
        self.assertEqual(status, 200, answer)
        choice = answer["choices"][0]
        self.assertEqual(choice["finish_reason"], "stop", choice)
        self.assertIn(str(big), choice["text"])
        self.assertEqual(json.loads(choice["text"]), {"n": big})

    def test_schema_without_a_finite_instance_is_refused_naming_the_path(self):
        # A required property whose schema is, through $ref, its own object: no document ends.
        schema = {"$defs": {"node": {"type": "object",
                                     "properties": {"next": {"$ref": "#/$defs/node"}},
                                     "required": ["next"]}},
                  "$ref": "#/$defs/node"}
        status, answer, _ = self.timed_post(
            {"prompt": "JSON:", "max_tokens": 20,
             "response_format": {"type": "json_schema",
                                 "json_schema": {"name": "endless", "schema": schema}}})
        self.assertEqual(status, 400, answer)
        message = answer["error"]["message"]
        self.assertIn("response_format.json_schema.schema", message)
        self.assertIn("/$defs/node/properties/next", message)


if __name__ == "__main__":
    unittest.main()
