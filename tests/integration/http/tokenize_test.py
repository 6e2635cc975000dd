"""POST /tokenize and /detokenize (vLLM's shapes) and /v1/models' max_model_len, against a real
arbor-coordinator and arbor-worker on `--model=tiny`.

A prompt's count is what a completion of it reports as prompt_tokens, text and chat alike, and
detokenizing its tokens gives the text back. The routes keep the completions' limits, token
check and error shapes: 401 without a token (the body unread), 413 past --http_max_body_bytes,
404 for another model, 400 naming the field.
"""

import json
import os
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, wait_ready  # noqa: E402  (path set above)

TOKEN = "0123456789abcdef0123456789abcdef"
MAX_BODY = 4096
MAX_CONTEXT = 512


def post(url, body, token=TOKEN):
    """POST `body` as JSON; returns (HTTP status, parsed answer), errors too."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


class TokenizeTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-tokenize-")
        tokens = os.path.join(cls.processes.dir, "tokens")
        with open(tokens, "w") as f:
            f.write(f"{TOKEN} alice user\n")
        [worker] = cls.processes.start("arbor-worker", "--model=tiny", "--threads=1",
                                       "--kv_tokens=4096", f"--max_context={MAX_CONTEXT}",
                                       "--listen=127.0.0.1:0")
        _, port = cls.processes.start(
            "arbor-coordinator", "--model=tiny", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", f"--workers=127.0.0.1:{worker}",
            f"--auth_tokens_file={tokens}", f"--http_max_body_bytes={MAX_BODY}",
            port_flags=("--port_file", "--http_port_file"))
        cls.base = f"http://127.0.0.1:{port}"
        wait_ready(cls.base)

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def test_text_count_matches_a_completion_and_round_trips(self):
        status, tokenized = post(self.base + "/tokenize",
                                 {"model": "tiny", "prompt": "Hello there, world"})
        self.assertEqual(status, 200, tokenized)
        self.assertEqual(set(tokenized), {"tokens", "count", "max_model_len"})
        self.assertEqual(tokenized["count"], len(tokenized["tokens"]))
        self.assertEqual(tokenized["max_model_len"], MAX_CONTEXT)
        status, completion = post(self.base + "/v1/completions",
                                  {"prompt": "Hello there, world", "max_tokens": 1})
        self.assertEqual(status, 200, completion)
        self.assertEqual(completion["usage"]["prompt_tokens"], tokenized["count"])
        status, text = post(self.base + "/detokenize",
                            {"model": "tiny", "tokens": tokenized["tokens"]})
        self.assertEqual(status, 200, text)
        self.assertTrue(text["prompt"].endswith("Hello there, world"), text)
        self.assertEqual(post(self.base + "/detokenize", {"tokens": []}), (200, {"prompt": ""}))

    def test_chat_count_matches_a_chat_completion(self):
        messages = [{"role": "user", "content": "What is two plus two?"}]
        status, tokenized = post(self.base + "/tokenize",
                                 {"messages": messages, "add_generation_prompt": True})
        self.assertEqual(status, 200, tokenized)
        status, completion = post(self.base + "/v1/chat/completions",
                                  {"messages": messages, "max_tokens": 1})
        self.assertEqual(status, 200, completion)
        self.assertEqual(completion["usage"]["prompt_tokens"], tokenized["count"])
        status, closed = post(self.base + "/tokenize",
                              {"messages": messages, "add_generation_prompt": False})
        self.assertEqual(status, 200, closed)
        self.assertLess(closed["count"], tokenized["count"])

    def test_errors_have_the_completions_statuses_and_shape(self):
        status, answer = post(self.base + "/tokenize", {"prompt": "hi"}, token=None)
        self.assertEqual(status, 401, answer)
        self.assertIn("message", answer["error"])
        status, answer = post(self.base + "/detokenize", {"tokens": [1]}, token="wrong")
        self.assertEqual(status, 401, answer)
        status, answer = post(self.base + "/tokenize", {"prompt": "x" * (2 * MAX_BODY)})
        self.assertEqual(status, 413, answer)
        status, answer = post(self.base + "/tokenize", {"model": "gpt-4", "prompt": "hi"})
        self.assertEqual(status, 404, answer)
        self.assertIn("'tiny'", answer["error"]["message"])
        status, answer = post(self.base + "/tokenize", {"prompt": "hi", "echo": True})
        self.assertEqual(status, 400, answer)
        self.assertIn("echo", answer["error"]["message"])
        status, answer = post(self.base + "/detokenize", {"tokens": [10 ** 9]})
        self.assertEqual(status, 400, answer)
        self.assertTrue(answer["error"]["message"].startswith("tokens."), answer)

    def test_models_list_max_model_len(self):
        request = urllib.request.Request(self.base + "/v1/models",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=30) as r:
            models = json.loads(r.read())
        self.assertEqual(models["data"][0]["max_model_len"], MAX_CONTEXT)


if __name__ == "__main__":
    unittest.main()
