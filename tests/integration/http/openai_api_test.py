"""The coordinator's OpenAI-compatible HTTP API, through clients nobody here wrote.

The official `openai` package (blocking and streaming completions and chat, logprobs, n > 1,
stop, seeds, its exception types) and curl (server-sent event framing) talk to a real
arbor-coordinator and arbor-worker on a random-weight checkpoint. Run by ctest with the project
virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

try:
    import openai
except ImportError:  # The dependency script installs it; without it there is nothing to test.
    print("openai is not installed in this Python; skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, wait_ready  # noqa: E402  (path set above)
from policies import BACKSPACE_ALWAYS  # noqa: E402


class Cluster(Processes):
    """A worker and coordinators (each with HTTP) on loopback, on a `tiny` checkpoint."""

    def __init__(self):
        super().__init__(prefix="arbor-http-")
        self.model = self.make_model()
        [worker] = self.start("arbor-worker", f"--model={self.model}", "--threads=1",
                              "--kv_tokens=16384", "--listen=127.0.0.1:0")
        self.worker_address = f"127.0.0.1:{worker}"

    def coordinator(self, *flags, workers=True):
        """Starts a coordinator; returns its HTTP base URL."""
        worker_flags = [f"--workers={self.worker_address}"] if workers else []
        _, port = self.start("arbor-coordinator", f"--model={self.model}",
                             "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                             *worker_flags, *flags,
                             port_flags=("--port_file", "--http_port_file"))
        base = f"http://127.0.0.1:{port}"
        if workers:  # Ready once the static worker has answered its first health poll.
            wait_ready(base)
        return base


get_json = http_json


def post_raw(url, body, headers=None):
    """POST bytes; returns (status, headers, parsed JSON body)."""
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers=headers or {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def open_stream(base, body):
    """Starts a streamed completion and reads its first event; returns (connection, job id)."""
    port = int(base.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", "/v1/completions", json.dumps(body),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise AssertionError(f"HTTP {response.status}: {response.read()}")
    line = response.readline()
    return connection, json.loads(line[len(b"data: "):])["choices"][0]["arbor"]["job_id"]


LONG_JOB = {"prompt": "Once", "max_tokens": 1500, "stream": True, "arbor": {"ignore_eos": True}}


class OpenAiApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()
        # One step per worker Run: jobs last long enough to be cancelled mid-stream.
        cls.base = cls.cluster.coordinator("--steps_per_run=2", "--first_run_steps=1")
        cls.client = openai.OpenAI(base_url=cls.base + "/v1", api_key="unused", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def tearDown(self):
        self.assertTrue(self.cluster.alive(), "a server died")

    def chat(self, **kwargs):
        args = dict(model="tiny", messages=[{"role": "user", "content": "Tell me a story."}],
                    max_tokens=12)
        args.update(kwargs)
        return self.client.chat.completions.create(**args)

    def test_models_and_health(self):
        models = self.client.models.list()
        self.assertEqual([m.id for m in models.data], ["tiny"])
        status, body = get_json(self.base + "/health")
        self.assertEqual((status, body["workers_ready"]), (200, 1))

    def test_the_model_is_named_in_any_case_and_others_are_404(self):
        done = self.client.completions.create(model="TINY", prompt="Hi", max_tokens=2)
        self.assertEqual(done.model, "tiny")
        with self.assertRaises(openai.NotFoundError):
            self.client.completions.create(model="gpt-4o", prompt="Hi", max_tokens=2)

    def test_completion_blocking_with_usage_and_job(self):
        r = self.client.completions.create(model="tiny", prompt="Once upon a time",
                                           max_tokens=9, seed=5, extra_body={"arbor": {
                                               "policy": {"mode": "POLICY_MODE_CANONICAL"}}})
        self.assertEqual(r.object, "text_completion")
        self.assertEqual(len(r.choices), 1)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)
        job_id = r.model_extra["arbor"]["job_id"]
        status, job = get_json(f"{self.base}/v1/jobs/{job_id}")
        self.assertEqual(status, 200)
        self.assertEqual(job["text"], r.choices[0].text)
        self.assertEqual(len(job["token_ids"]), r.usage.completion_tokens)
        self.assertEqual(r.choices[0].finish_reason,
                         "length" if job["finish_reason"] == "FINISH_REASON_MAX_TOKENS" else "stop")
        status, tree = get_json(f"{self.base}/v1/jobs/{job_id}/tree")
        self.assertEqual(status, 200)
        self.assertEqual(tree["format"], "arbor.tree")

    def test_replay_grows_the_same_tree(self):
        r = self.client.completions.create(model="tiny", prompt="The river", max_tokens=24,
                                           seed=77, extra_body={"arbor": {
                                               "policy": {"mode": "POLICY_MODE_SEARCH"}}})
        job_id = r.model_extra["arbor"]["job_id"]
        _, tree = get_json(f"{self.base}/v1/jobs/{job_id}/tree")
        status, replay = http_json(f"{self.base}/v1/jobs/{job_id}/replay", {})
        self.assertEqual(status, 200, replay)
        self.assertTrue(replay["identical"], replay)
        self.assertEqual(replay["job_id"], job_id)
        self.assertNotEqual(replay["replay_job_id"], job_id)
        self.assertEqual(replay["nodes"], len(tree["nodes"]))
        _, again = get_json(f"{self.base}/v1/jobs/{replay['replay_job_id']}")
        self.assertEqual(again["client_tag"], f"replay of {job_id}")
        self.assertEqual(again["text"], r.choices[0].text)
        status, missing = http_json(f"{self.base}/v1/jobs/no-such-job/replay", {})
        self.assertEqual(status, 404, missing)

    def test_seed_reproduces_and_n_gives_distinct_choices(self):
        a = self.chat(seed=1234, n=3)
        b = self.chat(seed=1234, n=3)
        self.assertEqual([c.index for c in a.choices], [0, 1, 2])
        self.assertEqual([c.message.content for c in a.choices],
                         [c.message.content for c in b.choices])
        self.assertEqual(len(set(a.model_extra["arbor"]["job_ids"])), 3)

    def test_stream_equals_committed_text_through_backspaces(self):
        stream = self.chat(seed=77, max_tokens=24, stream=True,
                           stream_options={"include_usage": True},
                           extra_body={"arbor": {"policy": BACKSPACE_ALWAYS,
                                                 "token_strategies": True}})
        text, job_id, usage, finish = "", None, None, None
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                job_id = choice.model_extra["arbor"]["job_id"]
                finish = choice.finish_reason or finish
        self.assertIsNotNone(usage)
        self.assertIn(finish, ("stop", "length"))
        status, job = get_json(f"{self.base}/v1/jobs/{job_id}")
        self.assertEqual(status, 200)
        self.assertGreater(job["strategies"]["backspace"], 0, "the policy never backspaced")
        self.assertEqual(text, job["text"])
        self.assertEqual(usage.completion_tokens, len(job["token_ids"]))
        # The blocking answer of the same seed is the same text.
        blocking = self.chat(seed=77, max_tokens=24,
                             extra_body={"arbor": {"policy": BACKSPACE_ALWAYS}})
        self.assertEqual(blocking.choices[0].message.content, text)

    def test_logprobs(self):
        r = self.chat(seed=3, logprobs=True, top_logprobs=3)
        content = r.choices[0].logprobs.content
        self.assertEqual(len(content), r.usage.completion_tokens)
        for entry in content:
            self.assertLessEqual(entry.logprob, 0)
            self.assertEqual(len(entry.top_logprobs), 3)
            self.assertGreaterEqual(entry.top_logprobs[0].logprob, entry.top_logprobs[2].logprob)
        c = self.client.completions.create(model="tiny", prompt="abc", max_tokens=5, seed=3,
                                           logprobs=2)
        lp = c.choices[0].logprobs
        self.assertEqual(len(lp.tokens), len(lp.token_logprobs))
        self.assertEqual(lp.text_offset[0], 0)

    def job_tokens(self, response):
        status, job = get_json(f"{self.base}/v1/jobs/{response.model_extra['arbor']['job_id']}")
        self.assertEqual(status, 200)
        return job["token_ids"]

    def test_logit_bias_and_penalties_reach_the_worker(self):
        args = dict(model="tiny", prompt="Once upon", max_tokens=6, temperature=0,
                    extra_body={"arbor": {"ignore_eos": True}})
        greedy = self.job_tokens(self.client.completions.create(**args))
        first = greedy[0]
        # Banned at -100, the greedy first token gives way; forced at +100, it is every token.
        avoided = self.job_tokens(self.client.completions.create(
            **args, logit_bias={str(first): -100}))
        self.assertNotEqual(avoided[0], first)
        forced = self.job_tokens(self.client.completions.create(
            **args, logit_bias={str(greedy[1] if greedy[1] != first else first + 1): 100}))
        self.assertEqual(len(set(forced)), 1)
        # The penalties are accepted and run (their arithmetic is checked on the worker against
        # float64, their mapping in the gateway's unit tests).
        penalized = self.job_tokens(self.client.completions.create(
            **dict(args, max_tokens=4, extra_body={"arbor": {"ignore_eos": True},
                                                   "repetition_penalty": 1.5}),
            logit_bias={str(first): 2}, presence_penalty=2, frequency_penalty=2))
        self.assertEqual(len(penalized), 4)
        with self.assertRaises(openai.BadRequestError) as refused:
            self.client.completions.create(**args, logit_bias={"1000000": 5})
        self.assertIn("logit_bias", str(refused.exception))

    def test_stop_string_cuts_the_text(self):
        full = self.client.completions.create(model="tiny", prompt="The", max_tokens=20,
                                              seed=11).choices[0].text
        self.assertGreater(len(full), 6)
        stop = full[4:6]
        cut = self.client.completions.create(model="tiny", prompt="The", max_tokens=20, seed=11,
                                             stop=[stop]).choices[0]
        self.assertEqual(cut.text, full[:full.index(stop)])
        self.assertEqual(cut.finish_reason, "stop")

    def test_stop_token_text_is_not_in_the_answer(self):
        # The tiny model has no reachable EOS, so a token it draws is made the stop token: the
        # answer must end before it (as before `<|im_end|>`), its id still the job's last.
        seed, prompt = 11, "The"
        free = self.client.completions.create(model="tiny", prompt=prompt, max_tokens=8,
                                              seed=seed)
        _, job = get_json(f"{self.base}/v1/jobs/{free.model_extra['arbor']['job_id']}")
        ids = job["token_ids"]
        stop_id = ids[3]
        k = ids.index(stop_id)  # Where the stopped run ends.
        before = self.client.completions.create(model="tiny", prompt=prompt, max_tokens=k,
                                                seed=seed).choices[0].text if k else ""
        stop = {"arbor": {"stop_token_ids": [stop_id]}}
        cut = self.client.completions.create(model="tiny", prompt=prompt, max_tokens=8,
                                             seed=seed, extra_body=stop)
        self.assertEqual(cut.choices[0].finish_reason, "stop")
        self.assertEqual(cut.choices[0].text, before)
        _, job = get_json(f"{self.base}/v1/jobs/{cut.model_extra['arbor']['job_id']}")
        self.assertEqual(job["token_ids"][-1], stop_id, "the stop token stays in the token ids")
        self.assertEqual(job["text"], before)
        # Chat, blocking and streamed, the same way.
        free = self.chat(seed=seed, max_tokens=8)
        _, job = get_json(f"{self.base}/v1/jobs/{free.model_extra['arbor']['job_id']}")
        ids = job["token_ids"]
        stop_id = ids[3]
        k = ids.index(stop_id)
        before = self.chat(seed=seed, max_tokens=k).choices[0].message.content if k else ""
        stop = {"arbor": {"stop_token_ids": [stop_id]}}
        blocking = self.chat(seed=seed, max_tokens=8, extra_body=stop).choices[0]
        self.assertEqual(blocking.finish_reason, "stop")
        self.assertEqual(blocking.message.content, before)
        streamed, finish = "", None
        for chunk in self.chat(seed=seed, max_tokens=8, extra_body=stop, stream=True):
            for choice in chunk.choices:
                streamed += choice.delta.content or ""
                finish = choice.finish_reason or finish
        self.assertEqual(finish, "stop")
        self.assertEqual(streamed, before)

    def test_root_leads_to_the_viewer(self):
        port = int(self.base.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/")
        response = connection.getresponse()
        self.assertIn(response.status, (301, 302, 303, 307, 308))
        self.assertEqual(response.getheader("Location"), "/ui/")
        connection.close()

    def test_errors_are_openai_exceptions(self):
        with self.assertRaises(openai.BadRequestError) as e:
            self.chat(max_tokens=0)
        self.assertEqual(e.exception.body["param"], "max_tokens")
        with self.assertRaises(openai.NotFoundError):
            self.chat(model="not-this-one")
        with self.assertRaises(openai.BadRequestError) as e:
            self.chat(extra_body={"temprature": 1})
        self.assertEqual(e.exception.body["param"], "temprature")
        with self.assertRaises(openai.BadRequestError):
            self.chat(messages=[{"role": "pirate", "content": "arr"}])
        with self.assertRaises(openai.NotFoundError):
            get = self.client.with_options(max_retries=0)
            get.get(f"/jobs/nope", cast_to=object)

    def test_bad_bodies_get_4xx_and_the_server_lives(self):
        url = self.base + "/v1/chat/completions"
        for body in (b"{", b"[1,2]", b'{"messages": "hi"}', b'{"messages": [{"role": 1}]}',
                     b'{"prompt": "\xff\xfe"}', b"\x00\x01\x02", b'{"max_tokens": 1e999}'):
            status, _, error = post_raw(url, body)
            self.assertEqual(status, 400, body)
            self.assertIn("message", error["error"])
        status, _, error = post_raw(url, b"x" * (9 << 20))
        self.assertEqual(status, 413)
        # A 5 MB prompt fits the body limit but not a job: 413 naming why, never 429 (which SDKs
        # retry for ever).
        huge = json.dumps({"model": "tiny", "prompt": "hi " * 1700000, "max_tokens": 1}).encode()
        status, headers, error = post_raw(self.base + "/v1/completions", huge)
        self.assertEqual(status, 413, error)
        self.assertNotIn("Retry-After", headers)
        self.assertEqual(get_json(self.base + "/health")[0], 200)

    def test_chunked_body_over_the_limit_is_refused_while_read(self):
        # Valid JSON padded past the 8 MiB limit with whitespace, sent chunked (no
        # Content-Length): the server must stop reading and refuse it, not parse and run it.
        port = int(self.base.rsplit(":", 1)[1])
        head = b'{"model": "tiny", "prompt": "Hi", "max_tokens": 1}'
        pad = b" " * (64 << 10)

        def chunks():
            yield head
            for _ in range((9 << 20) // len(pad)):
                yield pad

        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        status = None
        try:
            connection.request("POST", "/v1/completions", body=chunks(), encode_chunked=True,
                               headers={"Content-Type": "application/json"})
            status = connection.getresponse().status
        except (ConnectionError, http.client.HTTPException):
            status = "reset"  # The server stopped reading: refused before the body ended.
        finally:
            connection.close()
        self.assertIn(status, (413, "reset"))
        # Under the limit, a chunked body is read whole and served.
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/completions", body=iter([head, b"  "]),
                           encode_chunked=True, headers={"Content-Type": "application/json"})
        self.assertEqual(connection.getresponse().status, 200)
        connection.close()
        self.assertEqual(get_json(self.base + "/health")[0], 200)

    def test_a_burst_of_connections_queues(self):
        port = int(self.base.rsplit(":", 1)[1])
        # The listening socket's queue (ss prints a listener's backlog as Send-Q): httplib's own
        # 5 reset connections of a burst of streaming clients.
        out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True,
                             text=True, check=False).stdout.split()
        if out:
            self.assertGreaterEqual(int(out[2]), 128, out)
        # 300 clients connect at once, then each asks /health: every one is answered.
        sockets = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(300)]
        try:
            for s in sockets:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            for s in sockets:
                self.assertTrue(s.recv(64).startswith(b"HTTP/1.1 200"))
        finally:
            for s in sockets:
                s.close()

    def test_web_pages_of_other_sites_are_refused_on_loopback(self):
        body = json.dumps({"model": "tiny", "prompt": "Hi", "max_tokens": 1}).encode()
        url = self.base + "/v1/completions"
        for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                        {"Host": "evil.example"}, {"Host": "127.0.0.1.evil.example"}):
            status, _, error = post_raw(url, body, {"Content-Type": "text/plain", **headers})
            self.assertEqual(status, 403, headers)
            self.assertIn("refused" if "Origin" in headers else "does not name",
                          error["error"]["message"])
        port = self.base.rsplit(":", 1)[1]
        status, _, _ = post_raw(url, body, {"Content-Type": "application/json",
                                            "Origin": f"http://127.0.0.1:{port}"})
        self.assertEqual(status, 200)

    def test_curl_sse_framing(self):
        body = json.dumps({"model": "tiny", "prompt": "Hi", "max_tokens": 6, "stream": True})
        out = subprocess.run(["curl", "-sN", "-i", self.base + "/v1/completions", "-d", body],
                             check=True, capture_output=True, timeout=60).stdout.decode()
        head, _, events = out.partition("\r\n\r\n")  # Bytes: SSE framing is exact "\n\n".
        self.assertIn("text/event-stream", head.lower())
        frames = [f for f in events.split("\n\n") if f.strip()]
        self.assertEqual(frames[-1], "data: [DONE]")
        for frame in frames[:-1]:
            self.assertTrue(frame.startswith("data: "), frame)
            self.assertEqual(json.loads(frame[6:])["object"], "text_completion")

    def test_client_disconnect_cancels_the_job(self):
        connection, job_id = open_stream(self.base, LONG_JOB)
        connection.sock.close()
        connection.close()
        deadline = time.monotonic() + 20
        while True:
            state = get_json(f"{self.base}/v1/jobs/{job_id}")[1]["state"]
            if state != "JOB_STATE_RUNNING" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(state, "JOB_STATE_CANCELLED")


class PolicyFieldsTest(unittest.TestCase):
    """OpenAI's fields under a TRACE default (`arbor up`'s CoT-decoding) and under a preset."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()
        cls.trace_base = cls.cluster.coordinator("--policy=cot_decoding")
        cls.traces = openai.OpenAI(base_url=cls.trace_base + "/v1", api_key="unused",
                                   max_retries=0)
        cls.base = cls.cluster.coordinator()  # The built-in default: entropix search.
        cls.search = openai.OpenAI(base_url=cls.base + "/v1", api_key="unused", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def tearDown(self):
        self.assertTrue(self.cluster.alive(), "a server died")

    @staticmethod
    def texts(client, **kwargs):
        args = dict(model="tiny", prompt="Once upon a time", max_tokens=8)
        args.update(kwargs)
        return [c.text for c in client.completions.create(**args).choices]

    def test_n_is_the_best_distinct_traces_best_first(self):
        both = self.texts(self.traces, n=2, seed=3)
        self.assertEqual(len(both), 2)
        self.assertNotEqual(both[0], both[1], "two choices of one search are two traces")
        self.assertEqual(self.texts(self.traces, seed=3), both[:1], "the best trace comes first")
        self.assertEqual(self.texts(self.traces, n=2, seed=3, temperature=0), both,
                         "temperature 0: greedy traces, as without it")
        with self.assertRaises(openai.BadRequestError) as e:
            self.texts(self.traces, n=4)  # CoT-decoding opens 3 traces.
        self.assertEqual(e.exception.body["param"], "n")
        # A floor no runner-up clears: one trace, so the second choice has none, and says so.
        with self.assertRaises(openai.InternalServerError) as e:
            self.texts(self.traces, n=2, extra_body={
                "arbor": {"policy": {"trace": {"candidateMinP": 0.99}}}})
        self.assertIn("opened only 1 distinct traces", e.exception.body["message"])

    def test_temperature_samples_the_traces_and_seeds_replay(self):
        greedy = {self.texts(self.traces, seed=s)[0] for s in range(1, 5)}
        self.assertEqual(len(greedy), 1, "greedy traces do not depend on the seed")
        sampled = [self.texts(self.traces, seed=s, temperature=1.5, n=2) for s in range(1, 5)]
        self.assertGreater(len({t for pair in sampled for t in pair}), 2, sampled)
        for pair in sampled:
            self.assertNotEqual(pair[0], pair[1])
        self.assertEqual(self.texts(self.traces, seed=1, temperature=1.5, n=2), sampled[0])
        r = self.traces.completions.create(model="tiny", prompt="Once upon a time", max_tokens=8,
                                           seed=2, temperature=1.5, n=2)
        second = r.model_extra["arbor"]["job_ids"][1]
        status, replay = http_json(f"{self.trace_base}/v1/jobs/{second}/replay", {})
        self.assertEqual(status, 200, replay)
        self.assertTrue(replay["identical"], replay)

    def test_a_preset_takes_the_requests_sampling_fields(self):
        def distinct(**fields):  # top_k is not among the openai package's own arguments.
            return len({self.texts(self.search, seed=s, extra_body={
                "arbor": {"policy_name": "sample"}, **fields})[0] for s in range(1, 7)})
        self.assertEqual(distinct(top_k=1), 1, "top_k 1 leaves one candidate")
        # Near-ties of the random-weight model's logits survive even T 0.01 now and then.
        self.assertLessEqual(distinct(temperature=0.01), 2)
        self.assertGreater(distinct(temperature=1.9), 3)
        with self.assertRaises(openai.BadRequestError) as e:
            self.texts(self.search, temperature=0.5,
                       extra_body={"arbor": {"policy": {"sampling": {"temperature": 0.4}}}})
        self.assertEqual(e.exception.body["param"], "temperature")
        self.assertIn("drop one", e.exception.body["message"])


class StreamingSearchTest(unittest.TestCase):
    """Under a TRACE default the traces stream as reasoning while the answer is chosen."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()
        # A random model's first tokens are nearly alike, but rarely within half of the best, the
        # preset's floor: a floor of 0.01 makes sure its fork opens several traces.
        policy = os.path.join(cls.cluster.dir, "fork-wide.json")
        with open(policy, "w") as out:
            json.dump({"trace": {"candidateMinP": 0.01}}, out)
        base = cls.cluster.coordinator("--policy=cot_decoding", f"--policy_file={policy}")
        cls.client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def chat(self, **kwargs):
        return self.client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "Tell me a story"}],
            max_tokens=12, seed=5, **kwargs)

    def streamed(self, **kwargs):
        """(kind, text) of every non-empty delta, in order: kind is reasoning or content."""
        deltas = []
        for chunk in self.chat(stream=True, **kwargs):
            for choice in chunk.choices:
                reasoning = (choice.delta.model_extra or {}).get("reasoning_content")
                if reasoning:
                    deltas.append(("reasoning", reasoning))
                if choice.delta.content:
                    deltas.append(("content", choice.delta.content))
        return deltas

    def test_reasoning_deltas_come_before_the_answer(self):
        deltas = self.streamed()
        kinds = [kind for kind, _ in deltas]
        self.assertIn("reasoning", kinds)
        self.assertIn("content", kinds)
        first_content = kinds.index("content")
        self.assertNotIn("reasoning", kinds[first_content:], "the traces end before the answer")
        reasoning = "".join(text for kind, text in deltas if kind == "reasoning")
        content = "".join(text for kind, text in deltas if kind == "content")
        self.assertTrue(reasoning.startswith("Trace 1:\n"), reasoning)
        self.assertIn("Trace 2:\n", reasoning, "CoT-decoding forks more than one trace")
        self.assertIn(content, reasoning, "the answer is one of the traces")
        self.assertEqual(self.chat().choices[0].message.content, content)

    def test_reasoning_can_be_turned_off_or_asked_for_whole(self):
        off = self.streamed(extra_body={"arbor": {"reasoning": False}})
        self.assertEqual({kind for kind, _ in off}, {"content"})
        streamed = self.streamed()
        whole = self.chat().choices[0].message
        self.assertIsNone((whole.model_extra or {}).get("reasoning_content"),
                          "a whole answer leaves the traces out unless asked")
        asked = self.chat(extra_body={"arbor": {"reasoning": True}}).choices[0].message
        self.assertEqual(asked.model_extra["reasoning_content"],
                         "".join(text for kind, text in streamed if kind == "reasoning"))
        self.assertEqual(asked.content, whole.content)


class OverloadTest(unittest.TestCase):
    """429 with Retry-After when admission is full; 503 with no worker."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_overload_is_429_with_retry_after(self):
        base = self.cluster.coordinator("--max_active_jobs=1", "--max_queued_jobs=0",
                                        "--steps_per_run=1", "--first_run_steps=1")
        connection, _ = open_stream(base, LONG_JOB)  # Holds the only slot while open.
        try:
            status, headers, error = post_raw(base + "/v1/completions",
                                              b'{"prompt": "x", "max_tokens": 1}')
            self.assertEqual(status, 429)
            self.assertEqual(headers.get("Retry-After"), "1")
            self.assertEqual(error["error"]["type"], "rate_limit_error")
            client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
            with self.assertRaises(openai.RateLimitError):
                client.completions.create(model="tiny", prompt="x", max_tokens=1)
        finally:
            connection.close()

    def test_no_worker_is_503(self):
        base = self.cluster.coordinator(workers=False)
        self.assertEqual(get_json(base + "/health")[0], 503)
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
        with self.assertRaises(openai.InternalServerError) as e:
            client.completions.create(model="tiny", prompt="x", max_tokens=1)
        self.assertEqual(e.exception.status_code, 503)


if __name__ == "__main__":
    unittest.main()
