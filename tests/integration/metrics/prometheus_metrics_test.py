"""Prometheus /metrics of a real worker and coordinator, read with prometheus_client's parser.

A worker (--metrics_listen) and a coordinator run on a random-weight checkpoint; jobs go through
the public gRPC API (Python stubs generated from proto/ at test time): greedy jobs first, whose
worker-side counts are exact, then a mixed load (search and canonical policies, a cancelled job,
a refused request). The exported counters are checked against what the jobs report about
themselves. The coordinator's /metrics lives on its HTTP port (--http_listen); when this build
has none, that part is skipped. Run by ctest with the project virtualenv; ARBOR_BINARY_DIR and
ARBOR_SOURCE_DIR point at the build and the sources.
"""

import os
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

try:
    import grpc
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:  # The dependency script installs them; without them nothing to test.
    print(f"{e.name} is not installed in this Python; skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import BIN, Processes  # noqa: E402 (found through the path above)
from grpc_stubs import generate_stubs  # noqa: E402

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
KV_TOKENS, BLOCK_SIZE = 16384, 16
# Long enough for whole KV blocks, so a repeated prompt hits the prefix cache.
PROMPT = "The quick brown fox jumps over the lazy dog while the cat watches from the fence."


def scrape(port):
    """GET /metrics: {sample name: {frozenset of label pairs: value}}, and the family types."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        assert response.status == 200, response.status
        assert response.headers["Content-Type"] == CONTENT_TYPE, response.headers["Content-Type"]
        text = response.read().decode("utf-8")
    samples, types = {}, {}
    for family in text_string_to_metric_families(text):
        assert family.documentation, f"{family.name} has no HELP"
        types[family.name] = family.type
        for sample in family.samples:
            samples.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return samples, types


def value(samples, name, **labels):
    return samples.get(name, {}).get(frozenset(labels.items()), 0.0)


def help_lists(binary, flag):
    result = subprocess.run([os.path.join(BIN, binary), "--helpfull"], capture_output=True,
                            text=True)
    return flag in result.stdout + result.stderr


def runs_answered(samples):
    """Worker runs answered OK: branch runs come by Run, main-path runs by RunStream."""
    return sum(value(samples, "arbor_grpc_server_handled_total", method=f"arbor.v1.Worker/{m}",
                     code="OK") for m in ("Run", "RunStream"))


class PrometheusMetricsTest(unittest.TestCase):
    """One load, run once in the set-up; each test reads the scrapes taken after its part."""

    @classmethod
    def setUpClass(cls):
        cls.servers = Processes(prefix="arbor-metrics-")
        cls.addClassCleanup(cls.servers.stop)  # Also when the set-up fails half way.
        cls.pb, cls.rpc, cls.entropix = generate_stubs(os.path.join(cls.servers.dir, "stubs"))
        model = cls.servers.make_model()
        worker_port, cls.worker_metrics = cls.servers.start(
            "arbor-worker", f"--model={model}", "--threads=1", f"--kv_tokens={KV_TOKENS}",
            f"--block_size={BLOCK_SIZE}", "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
            port_flags=("--port_file", "--metrics_port_file"))
        coordinator = ["arbor-coordinator", f"--model={model}", "--listen=127.0.0.1:0",
                       f"--workers=127.0.0.1:{worker_port}"]
        # The coordinator serves /metrics on its HTTP port, when it has one.
        if help_lists("arbor-coordinator", "--http_listen"):
            port, http_port = cls.servers.start(
                *coordinator, "--http_listen=127.0.0.1:0",
                port_flags=("--port_file", "--http_port_file"))
        else:
            (port,), http_port = cls.servers.start(*coordinator), None
        cls.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        cls.addClassCleanup(cls.channel.close)
        cls.stub = cls.rpc.GenerationStub(cls.channel)
        cls.finished = []  # Every job's FinishedEvent (a cancelled job's made from its Job).
        cls.calls = {}  # (method, code name) -> count, as the client saw them.

        # Greedy jobs first, all on one prompt: what the worker did for them is known exactly.
        cls.greedy = [cls.generate(cls.request(12, cls.greedy_policy(), seed=s))
                      for s in (1, 2, 3)]
        cls.after_greedy = cls.settled_worker_samples()
        cls.mixed_load()
        cls.after_all = cls.settled_worker_samples()
        cls.coordinator, cls.no_coordinator = None, None
        if http_port is None:
            cls.no_coordinator = "arbor-coordinator has no --http_listen in this build"
        else:
            try:
                cls.coordinator = scrape(http_port)
            except urllib.error.HTTPError as e:
                if e.code != 404:
                    raise
                cls.no_coordinator = "the coordinator's HTTP server has no /metrics route yet"

    # --- the load -------------------------------------------------------------------------------

    @classmethod
    def request(cls, max_tokens, policy=None, seed=7):
        request = cls.pb.GenerateRequest(text=PROMPT, max_tokens=max_tokens, seed=seed)
        request.stop.ignore_eos = True
        if policy is not None:
            request.policy.CopyFrom(policy)
        return request

    @classmethod
    def greedy_policy(cls):
        policy = cls.entropix.PolicyConfig()
        policy.thresholds.lelv_entropy = 64  # Every step is row 1: ARGMAX.
        policy.thresholds.lelv_varentropy = 4096
        return policy

    @classmethod
    def count(cls, method, code):
        key = (f"arbor.v1.Generation/{method}", code.name)
        cls.calls[key] = cls.calls.get(key, 0) + 1

    @classmethod
    def generate(cls, request):
        """Runs a job to its end; returns its finished event."""
        deadline = time.monotonic() + 30
        while True:  # The static worker is ready after its first health poll.
            try:
                events = list(cls.stub.Generate(request, timeout=120))
                cls.count("Generate", grpc.StatusCode.OK)
                break
            except grpc.RpcError as e:
                cls.count("Generate", e.code())
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert events[-1].HasField("finished"), events[-1]
        cls.finished.append(events[-1].finished)
        return events[-1].finished

    @classmethod
    def mixed_load(cls):
        """Search jobs (structural decisions on a random model), a canonical one, a job
        cancelled while it runs, and a refused request."""
        for seed in (11, 12):
            cls.generate(cls.request(16, seed=seed))
        canonical = cls.entropix.PolicyConfig(mode=cls.entropix.POLICY_MODE_CANONICAL)
        cls.generate(cls.request(16, canonical, seed=13))
        job = cls.stub.Submit(cls.request(2000, cls.greedy_policy(), seed=14), timeout=30)
        cls.count("Submit", grpc.StatusCode.OK)
        cancelled = cls.stub.Cancel(job, timeout=30)
        cls.count("Cancel", grpc.StatusCode.OK)
        cls.finished.append(cls.pb.FinishedEvent(
            reason=cancelled.finish_reason, usage=cancelled.usage,
            strategies=cancelled.strategies))
        try:
            list(cls.stub.Generate(cls.request(-1), timeout=30))
            raise AssertionError("max_tokens -1 was accepted")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
            cls.count("Generate", e.code())

    @classmethod
    def settled_worker_samples(cls):
        """The worker's samples once the jobs' sequences are released (asynchronously, after
        each job ends)."""
        deadline = time.monotonic() + 10
        while True:
            samples, types = scrape(cls.worker_metrics)
            if value(samples, "arbor_worker_sequences") == 0 or time.monotonic() > deadline:
                return samples, types
            time.sleep(0.05)

    # --- the tests ------------------------------------------------------------------------------

    def test_greedy_jobs_match_the_worker_exactly(self):
        samples, _ = self.after_greedy
        committed = sum(f.usage.generated_tokens for f in self.greedy)
        self.assertEqual(committed, 36)
        self.assertEqual(value(samples, "arbor_worker_generated_tokens_total"), committed)
        # The repeated prompt's whole blocks came from the prefix cache, as the jobs report.
        cached = sum(f.usage.cached_prompt_tokens for f in self.greedy)
        self.assertGreater(cached, 0)
        self.assertEqual(value(samples, "arbor_worker_prefix_cache_hit_tokens_total"), cached)
        self.assertEqual(value(samples, "arbor_worker_sequences"), 0)
        self.assertGreaterEqual(runs_answered(samples), len(self.greedy))

    def test_worker_families_are_consistent(self):
        samples, types = self.after_all
        self.assertEqual(types["arbor_worker_generated_tokens"], "counter")
        self.assertEqual(types["arbor_worker_step_seconds"], "histogram")
        self.assertEqual(types["arbor_worker_kv_blocks"], "gauge")
        blocks = sum(value(samples, "arbor_worker_kv_blocks", state=s)
                     for s in ("used", "cached", "free"))
        self.assertEqual(blocks, KV_TOKENS // BLOCK_SIZE)
        steps = value(samples, "arbor_worker_forward_steps_total")
        self.assertGreater(steps, 0)
        for histogram in ("arbor_worker_step_seconds", "arbor_worker_step_rows",
                          "arbor_worker_step_tokens"):
            self.assertEqual(value(samples, histogram + "_count"), steps, histogram)
            self.assertEqual(value(samples, histogram + "_bucket", le="+Inf"), steps, histogram)

    def test_worker_after_the_mixed_load(self):
        samples, _ = self.after_all
        # Branch rollouts and re-drawn tokens are generated too, and only some are committed.
        self.assertGreaterEqual(value(samples, "arbor_worker_generated_tokens_total"),
                                sum(f.usage.generated_tokens for f in self.finished))
        self.assertEqual(value(samples, "arbor_worker_sequences"), 0)
        self.assertEqual(value(samples, "arbor_worker_active_runs"), 0)
        ran = self.calls[("arbor.v1.Generation/Generate", "OK")]
        self.assertGreaterEqual(runs_answered(samples), ran)

    def test_coordinator_agrees_with_the_jobs(self):
        if self.coordinator is None:
            self.skipTest(self.no_coordinator)
        samples, types = self.coordinator
        jobs = self.finished
        self.assertEqual(types["arbor_coordinator_committed_tokens"], "counter")
        self.assertEqual(value(samples, "arbor_coordinator_committed_tokens_total"),
                         sum(f.usage.generated_tokens for f in jobs))
        self.assertEqual(value(samples, "arbor_coordinator_explored_tokens_total"),
                         sum(f.usage.explored_tokens for f in jobs))
        self.assertEqual(value(samples, "arbor_coordinator_prompt_tokens_total"),
                         sum(f.usage.prompt_tokens for f in jobs))
        reasons = {}
        for f in jobs:
            name = self.pb.FinishReason.Name(f.reason).removeprefix("FINISH_REASON_").lower()
            reasons[name] = reasons.get(name, 0) + 1
        self.assertEqual(reasons.get("cancelled"), 1)
        for reason, n in reasons.items():
            self.assertEqual(value(samples, "arbor_coordinator_jobs_finished_total",
                                   reason=reason), n, reason)
        for field in self.pb.StrategyCounts.DESCRIPTOR.fields:
            self.assertEqual(value(samples, "arbor_coordinator_strategies_total",
                                   strategy=field.name),
                             sum(getattr(f.strategies, field.name) for f in jobs), field.name)
        for (method, code), n in self.calls.items():
            self.assertEqual(value(samples, "arbor_grpc_server_handled_total", method=method,
                                   code=code), n, (method, code))
        self.assertEqual(value(samples, "arbor_coordinator_active_jobs"), 0)
        self.assertEqual(value(samples, "arbor_coordinator_queued_jobs"), 0)
        self.assertEqual(value(samples, "arbor_coordinator_admission_rejections_total"), 0)
        started = sum(1 for f in jobs if f.usage.generated_tokens > 0)
        self.assertEqual(value(samples, "arbor_coordinator_time_to_first_token_seconds_count"),
                         started)


if __name__ == "__main__":
    unittest.main()
