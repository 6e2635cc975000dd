"""A real Prometheus (Debian's `prometheus`) scrapes a live cluster with deploy/prometheus's
configuration, and every expression of deploy/grafana's dashboard is queried from it.

A worker (--metrics_listen) and a coordinator (HTTP) run on a random-weight checkpoint on
loopback; the configuration is the shipped one with only what a test cluster differs in: the
addresses (static ones for the workers instead of the DNS name), plain HTTP for the coordinator
(it runs without TLS here) and a 1 s scrape interval. After a chat completion, a streamed one and
a 404, every panel's expression must evaluate without error to a non-empty result, so a metric
renamed on either side breaks this test. `promtool` checks the shipped file as written. Skipped
(exit 77) where prometheus is not installed; ARBOR_BINARY_DIR and ARBOR_SOURCE_DIR point at the
build and the sources.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import unittest
import urllib.parse
import urllib.request

try:
    import yaml
except ImportError:
    print("python3-yaml is not installed; skipping")
    sys.exit(77)
if shutil.which("prometheus") is None or shutil.which("promtool") is None:
    print("prometheus is not installed; skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, wait_ready  # noqa: E402

SRC = os.environ.get("ARBOR_SOURCE_DIR", ".")
CONFIG = os.path.join(SRC, "deploy", "prometheus", "prometheus.yml")
DASHBOARD = os.path.join(SRC, "deploy", "grafana", "arbor-dashboard.json")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_config(coordinator_port, worker_port):
    """The shipped configuration, pointed at this cluster."""
    with open(CONFIG) as f:
        config = yaml.safe_load(f)
    config["global"]["scrape_interval"] = "1s"
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    coordinator = jobs["arbor-coordinator"]
    coordinator["scheme"] = "http"
    del coordinator["tls_config"]
    coordinator["static_configs"] = [{"targets": [f"127.0.0.1:{coordinator_port}"]}]
    worker = jobs["arbor-worker"]
    del worker["dns_sd_configs"]
    worker["static_configs"] = [{"targets": [f"127.0.0.1:{worker_port}"]}]
    return config


class PrometheusServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.servers = Processes(prefix="arbor-prometheus-")
        cls.addClassCleanup(cls.servers.stop)
        model = cls.servers.make_model()
        worker, worker_metrics = cls.servers.start(
            "arbor-worker", f"--model={model}", "--threads=1", "--kv_tokens=4096",
            "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
            port_flags=("--port_file", "--metrics_port_file"))
        _, http_port = cls.servers.start(
            "arbor-coordinator", f"--model={model}", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", f"--workers=127.0.0.1:{worker}",
            port_flags=("--port_file", "--http_port_file"))
        cls.base = f"http://127.0.0.1:{http_port}"
        wait_ready(cls.base)

        config_path = os.path.join(cls.servers.dir, "prometheus.yml")
        with open(config_path, "w") as f:
            yaml.safe_dump(test_config(http_port, worker_metrics), f)
        cls.prometheus_port = free_port()
        cls.prometheus_log = open(os.path.join(cls.servers.dir, "prometheus.log"), "w")
        cls.addClassCleanup(cls.prometheus_log.close)
        cls.prometheus = subprocess.Popen(
            ["prometheus", f"--config.file={config_path}",
             f"--storage.tsdb.path={os.path.join(cls.servers.dir, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{cls.prometheus_port}"],
            stdout=cls.prometheus_log, stderr=subprocess.STDOUT)
        cls.addClassCleanup(cls.stop_prometheus)

        # Traffic for every panel: a blocking and a streamed chat completion, and a 404.
        chat = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8}
        status, _ = http_json(cls.base + "/v1/chat/completions", chat)
        assert status == 200, status
        stream = urllib.request.Request(
            cls.base + "/v1/chat/completions", data=json.dumps({**chat, "stream": True}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(stream, timeout=60) as r:
            assert b"[DONE]" in r.read()
        assert http_json(cls.base + "/v1/jobs/no-such-job")[0] == 404
        cls.wait_for_targets()

    @classmethod
    def stop_prometheus(cls):
        cls.prometheus.terminate()
        try:
            cls.prometheus.wait(timeout=15)
        except subprocess.TimeoutExpired:
            cls.prometheus.kill()

    @classmethod
    def query(cls, expr):
        url = (f"http://127.0.0.1:{cls.prometheus_port}/api/v1/query?" +
               urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    @classmethod
    def wait_for_targets(cls, timeout=60.0):
        """Until both targets are up and have been scraped a few times (rates need 2 samples)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cls.prometheus.poll() is not None:
                raise RuntimeError("prometheus exited; see its log")
            try:
                up = cls.query('count_over_time(up{job=~"arbor.*"}[1m])')["data"]["result"]
                if len(up) == 2 and all(float(s["value"][1]) >= 4 for s in up):
                    return
            except OSError:
                pass  # Not listening yet.
            time.sleep(0.5)
        raise TimeoutError("prometheus did not scrape both targets")

    def test_shipped_configuration_is_valid(self):
        result = subprocess.run(["promtool", "check", "config", CONFIG], capture_output=True,
                                text=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_both_targets_are_up(self):
        up = self.query('up{job=~"arbor.*"}')["data"]["result"]
        self.assertEqual(sorted(s["metric"]["job"] for s in up),
                         ["arbor-coordinator", "arbor-worker"])
        self.assertTrue(all(s["value"][1] == "1" for s in up), up)

    def test_every_dashboard_expression_has_data(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        exprs = [(panel["title"], target["expr"]) for panel in dashboard["panels"]
                 for target in panel["targets"]]
        self.assertGreaterEqual(len(exprs), 15)
        for title, expr in exprs:
            with self.subTest(panel=title, expr=expr):
                answer = self.query(expr)
                self.assertEqual(answer["status"], "success", answer)
                self.assertTrue(answer["data"]["result"], f"no data for {expr}")

    def test_http_requests_by_route_and_status(self):
        result = self.query("arbor_http_requests_total")["data"]["result"]
        seen = {(s["metric"]["route"], s["metric"]["code"]): float(s["value"][1]) for s in result}
        self.assertEqual(seen.get(("/v1/chat/completions", "200")), 2.0, seen)
        self.assertEqual(seen.get(("/v1/jobs/{id}", "404")), 1.0, seen)


if __name__ == "__main__":
    unittest.main()
