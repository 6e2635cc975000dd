"""`arbor up --worker_metrics_port=P`: worker i serves its Prometheus /metrics on P + i, so a
scrape configuration written beforehand finds every worker; a port range past 65535 is refused.
"""

import os
import socket
import subprocess
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from arbor_processes import BIN, start_arbor_up  # noqa: E402  (path set above)


def free_port_pair():
    """A port P with P and P + 1 both free now."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return port
    raise RuntimeError("no two consecutive free ports")


class UpMetricsPortTest(unittest.TestCase):

    def test_workers_serve_metrics_on_consecutive_ports(self):
        port = free_port_pair()
        _, printed = start_arbor_up(
            self, ["--model=tiny", "--num_workers=2", "--port=0", "--http_port=-1",
                   f"--worker_metrics_port={port}"])
        for i in range(2):
            self.assertIn(f"127.0.0.1:{port + i}/metrics", printed)
            with urllib.request.urlopen(f"http://127.0.0.1:{port + i}/metrics", timeout=10) as r:
                self.assertIn("arbor_worker_", r.read().decode())

    def test_a_range_past_the_last_port_is_refused(self):
        out = subprocess.run(
            [os.path.join(BIN, "arbor"), "up", "--model=tiny", "--num_workers=2",
             "--worker_metrics_port=65535"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
        self.assertIn("--worker_metrics_port", out.stderr)


if __name__ == "__main__":
    unittest.main()
