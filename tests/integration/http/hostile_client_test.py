"""Hostile HTTP clients against a real arbor-coordinator and arbor-worker.

Each attack (bodies nested deep, chunked bodies over the size limit, bodies sent slowly or
abandoned half-way, headers sent a byte at a time on more connections than the gateway keeps
threads for, with and without a token) must be answered with the right status, and
throughout it the coordinator must stay up and answer GET /health within 1 s. Run by ctest with
the project virtualenv; ARBOR_BINARY_DIR points at the build.
"""

import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, start_http_cluster  # noqa: E402

MAX_BODY = 256 * 1024  # Room for the 200 KB deeply nested body.
TOKEN = "0123456789abcdef0123456789abcdef"


def deep_body(levels):
    """A completion request whose arbor.policy is `levels` arrays deep."""
    return ('{"prompt":"hi","arbor":{"policy":' + "[" * levels + "]" * levels + "}}").encode()


class HealthWatch:
    """Polls GET /health from a thread of its own; records the slowest answer and any failure."""

    def __init__(self, base):
        self.base, self.slowest, self.failures = base, 0.0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            start = time.monotonic()
            try:
                status, _ = http_json(self.base + "/health", timeout=1.0)
                if status != 200:
                    self.failures.append(f"/health answered {status}")
            except OSError as e:  # Includes timeouts.
                self.failures.append(f"/health: {e}")
            self.slowest = max(self.slowest, time.monotonic() - start)
            time.sleep(0.1)

    def finish(self):
        self._stop.set()
        self._thread.join()


def raw_request(port, head, body_parts=(), delay=0.0, read=True):
    """Sends `head` then each of `body_parts` (pausing `delay` s between); returns the status
    line's code, or None when the connection closed without one."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head)
        try:
            for part in body_parts:
                s.sendall(part)
                time.sleep(delay)
        except (BrokenPipeError, ConnectionResetError):
            pass  # Refused before the body ended; the answer is still there to read.
        if not read:
            return None
        answer = b""
        try:
            while b"\r\n" not in answer:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except ConnectionResetError:
            pass
        return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None


def chunked(data, size=16384):
    """`data` as HTTP/1.1 chunks, ending with the last-chunk."""
    parts = [b"%x\r\n%s\r\n" % (len(data[i:i + size]), data[i:i + size])
             for i in range(0, len(data), size)]
    return parts + [b"0\r\n\r\n"]


def post_head(length=None, token=None):
    headers = ["POST /v1/completions HTTP/1.1", "Host: 127.0.0.1",
               "Content-Type: application/json"]
    headers.append("Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}")
    if token:
        headers.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(headers) + "\r\n\r\n").encode()


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

        def crawl():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
                    for b in head:
                        if stop.is_set():
                            return
                        s.sendall(bytes([b]))
                        time.sleep(0.2)
            except OSError:
                pass

        threads = [threading.Thread(target=crawl, daemon=True) for _ in range(100)]
        for t in threads:
            t.start()
        time.sleep(3.0)  # The watch polls /health throughout (tearDown checks it).
        status, _ = http_json(self.base + "/health", timeout=1.0)
        self.assertEqual(status, 200)
        stop.set()
        for t in threads:
            t.join()

if __name__ == "__main__":
    unittest.main()
