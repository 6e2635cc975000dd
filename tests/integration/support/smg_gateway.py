"""The Shepherd Model Gateway (`smg` on PyPI) in front of coordinators' HTTP gateways.

Starts `smg launch --policy cache_aware` on a free loopback port over the given coordinator base
URLs, probing their /health every second and giving a backend up at its first failed probe, as
docs/RELIABILITY.md ("Behind a gateway") deploys it, and waits until it routes to all of them.
Import it after putting this folder on sys.path; SMG is the console script beside the Python
running the caller (scripts/install-deps.sh installs it into the project virtualenv).
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

SMG = os.path.join(os.path.dirname(sys.executable), "smg")


def installed():
    """Whether the smg console script is there to run."""
    return os.access(SMG, os.X_OK)


def free_port():
    """A loopback port free now (smg writes no port file, so it is given one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def eventually(check, timeout=60, what="the condition"):
    """Calls `check` until it returns a true value, which it returns; fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.2)


def get(url, timeout=10):
    """(HTTP status, body text) of GET `url`; a refused connection is status 0."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, ""


class Gateway:
    """A running `smg launch` over `bases`; its log goes to `log_path`. `flags` are added to
    the launch command (e.g. how soon a failed backend is tried again)."""

    def __init__(self, bases, log_path, flags=()):
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [SMG, "launch", "--host", "127.0.0.1", "--port", str(port),
             "--worker-urls", *bases, "--policy", "cache_aware",
             # Pure load balancing: the coordinators tokenize; nothing to fetch from a hub.
             "--disable-tokenizer-autoload",
             "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port()),
             "--health-check-endpoint", "/health", "--health-check-interval-secs", "1",
             "--health-check-timeout-secs", "1", "--health-failure-threshold", "1",
             "--cb-failure-threshold", "1", "--request-timeout-secs", "120", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        try:
            eventually(lambda: (self.process.poll() is None
                                and self.healthy_backends() == len(bases)),
                       60, "smg routing to every coordinator")
        except AssertionError:
            self.stop()
            raise

    def healthy_backends(self):
        """How many backends smg's GET /workers lists as healthy (None when it does not answer)."""
        status, body = get(self.base + "/workers")
        if status != 200:
            return None
        return sum(1 for w in json.loads(body)["workers"] if w.get("is_healthy"))

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
