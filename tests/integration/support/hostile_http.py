"""Hostile HTTP clients and a /health watch, for the hostile-client tests and the chaos soak.

Raw sockets, so requests can be malformed, slow, chunked or abandoned in ways no HTTP library
sends them.
"""

import socket
import threading
import time

from arbor_processes import http_json


def deep_body(levels):
    """A completion request whose arbor.policy is `levels` arrays deep."""
    return ('{"prompt":"hi","arbor":{"policy":' + "[" * levels + "]" * levels + "}}").encode()


class HealthWatch:
    """Polls GET /health from a thread of its own; records the slowest answer and any failure,
    except while `excused()` says the coordinator is meant to be down (a restart). With
    `any_answer`, a 503 (no worker ready: they are being killed) counts as an answer too."""

    def __init__(self, base, excused=lambda: False, any_answer=False):
        self.base, self.slowest, self.failures, self.excused = base, 0.0, [], excused
        self.any_answer = any_answer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            start = time.monotonic()
            failure = None
            try:
                status, _ = http_json(self.base + "/health", timeout=1.0)
                if status != 200 and not (self.any_answer and status == 503):
                    failure = f"/health answered {status}"
            except OSError as e:  # Includes timeouts.
                failure = f"/health: {e}"
            if not self.excused():
                if failure:
                    self.failures.append(failure)
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


def crawl_headers(port, head, stop, delay=0.2):
    """Sends `head` a byte every `delay` s on one connection (slowloris) until `stop` is set or
    it is all sent."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            for b in head:
                if stop.is_set():
                    return
                s.sendall(bytes([b]))
                time.sleep(delay)
    except OSError:
        pass
