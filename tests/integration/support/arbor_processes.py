"""Real Arbor processes for the Python integration tests.

Starts the built binaries on loopback with free ports, learns the ports they bound from the port
files they write (--port_file, --metrics_port_file, --http_port_file), and stops them all, so
each test script does not keep its own copy of that. Import it after putting this folder on
sys.path; ARBOR_BINARY_DIR names the build.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

BIN = os.path.join(os.environ.get("ARBOR_BINARY_DIR", "build"), "bin")


def wait_for_file(path, process, timeout=60.0):
    """The stripped contents of `path` once `process` wrote it; fails if the process exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            if text:
                return text
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        time.sleep(0.05)
    raise TimeoutError(path)


def http_json(url, body=None, timeout=60):
    """GET `url`, or POST `body` as JSON; returns (HTTP status, parsed JSON answer), errors too."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def wait_ready(base, timeout=30.0):
    """Waits until the coordinator at HTTP `base` has a ready worker (GET /health is 200)."""
    deadline = time.monotonic() + timeout
    while http_json(base + "/health")[0] != 200:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{base}: no ready worker after {timeout} s")
        time.sleep(0.05)


def wait_for_log(processes, index, text, timeout=60.0):
    """The log of `processes`' process `index` once it holds `text`; fails after `timeout`
    seconds, showing the log."""
    deadline = time.monotonic() + timeout
    while text not in processes.log(index):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} after {timeout} s in:\n{processes.log(index)}")
        time.sleep(0.1)
    return processes.log(index)


def start_arbor_up(test, flags, timeout=90.0):
    """`arbor up FLAGS` started for `test` (stopped with Ctrl-C at its cleanup): (the process,
    what it printed up to its log folder's line, which comes after the rest)."""
    process = subprocess.Popen([os.path.join(BIN, "arbor"), "up", *flags],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    test.addCleanup(process.wait, 30)
    test.addCleanup(process.send_signal, signal.SIGINT)
    printed = ""
    deadline = time.monotonic() + timeout
    while "logs " not in printed and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        printed += line
    test.assertIn("logs ", printed)
    return process, printed


class Processes:
    """Processes started from BIN, their logs and port files in one temporary folder."""

    def __init__(self, prefix="arbor-"):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.processes = []

    def make_model(self, preset="tiny"):
        """A make-model checkpoint of `preset` in this folder; returns its path."""
        model = os.path.join(self.dir, preset)
        subprocess.run([os.path.join(BIN, "arbor"), "make-model", f"--preset={preset}",
                        f"--out={model}"], check=True, capture_output=True)
        return model

    def start(self, binary, *flags, port_flags=("--port_file",)):
        """Starts `binary` with `flags` plus one file for each of `port_flags`; returns the
        ports read from those files, in that order."""
        n = len(self.processes)
        files = [os.path.join(self.dir, f"{n}{flag.lstrip('-')}") for flag in port_flags]
        with open(os.path.join(self.dir, f"log-{n}"), "w") as log:  # The child keeps its copy.
            process = subprocess.Popen(
                [os.path.join(BIN, binary), *flags,
                 *(f"{flag}={path}" for flag, path in zip(port_flags, files))],
                stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return [int(wait_for_file(path, process)) for path in files]

    def log(self, index):
        with open(os.path.join(self.dir, f"log-{index}")) as f:
            return f.read()

    def alive(self):
        return all(p.poll() is None for p in self.processes)

    def stop(self):
        """SIGTERM to all (they drain), SIGKILL to any still up after 15 s; removes the folder."""
        for p in self.processes:
            p.terminate()
        for p in self.processes:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_http_cluster(processes, preset="tiny", worker_flags=(), coordinator_flags=(),
                       workers=1, chat_template=None, model=None):
    """A make-model checkpoint of `preset` in the processes' folder, `workers` workers on it and
    a coordinator with HTTP, on loopback; waits until a worker is ready and returns the
    coordinator's HTTP base URL. `chat_template`: Jinja text that replaces the checkpoint's own
    in its tokenizer_config.json (another model family's template on the same vocabulary).
    `model`: serve this --model (a name, file or directory) instead of a make-model checkpoint."""
    model = model or processes.make_model(preset)
    if chat_template is not None:
        config_path = os.path.join(model, "tokenizer_config.json")
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
        config["chat_template"] = chat_template
        with open(config_path, "w", encoding="utf-8") as f:
            json.dump(config, f, ensure_ascii=False)
    ports = [processes.start("arbor-worker", f"--model={model}", "--listen=127.0.0.1:0",
                             *worker_flags)[0] for _ in range(workers)]
    _, port = processes.start("arbor-coordinator", f"--model={model}", "--listen=127.0.0.1:0",
                              "--http_listen=127.0.0.1:0",
                              "--workers=" + ",".join(f"127.0.0.1:{w}" for w in ports),
                              *coordinator_flags, port_flags=("--port_file", "--http_port_file"))
    base = f"http://127.0.0.1:{port}"
    wait_ready(base)
    return base


SMOLLM2 = "smollm2-135m-instruct"


def start_smollm2_cluster(processes, worker_flags=()):
    """start_http_cluster on the real SmolLM2-135M-Instruct, fetched into the cache as users' is
    (with this Python's pip); raises unittest.SkipTest when it is not cached and cannot be
    fetched, and stops `processes` then."""
    os.environ.setdefault("ARBOR_PYTHON", sys.executable)
    try:
        return start_http_cluster(processes, model=SMOLLM2, worker_flags=worker_flags)
    except (RuntimeError, TimeoutError):
        logs = "".join(processes.log(i) for i in range(len(processes.processes)))
        processes.stop()
        if "pip" in logs or "network" in logs:
            raise unittest.SkipTest(f"SmolLM2 is not cached and cannot be fetched:\n{logs}")
        raise
