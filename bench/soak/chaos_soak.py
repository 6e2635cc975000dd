#!/usr/bin/env python3
"""Chaos soak: N Generate jobs at concurrency C (or as many as --minutes allow), some with
deadlines and some cancelled by their client, while workers are killed and restarted, stopped
with SIGTERM and restarted, frozen with SIGSTOP for --freeze_seconds, drained over the Cluster
API, and the coordinator is killed and restarted; with --hostile, hostile HTTP clients attack
the coordinator's OpenAI gateway all along (bodies nested 100,000 deep, chunked bodies over the
size limit, a million stop ids, headers a byte at a time on 100 connections, bodies abandoned
half-way) while GET /health is polled every 0.1 s — all real processes on loopback with a tiny
synthetic model. At the end it checks that every job got a final answer (a finished stream or
an RPC error, none hung), that every attack got its 4xx (or a closed connection), that /health
answered within 1 s whenever the coordinator was up, that every worker's KV is back to zero
used blocks, that no process's resident memory grew more than --max_growth_mb over its life
(sampled every 0.5 s), that every process stopped with SIGTERM exited 0, and that no log holds a
sanitizer report — so the same run on an ASan/LSan build (-DARBOR_SANITIZE=address) also fails
on memory errors and on leaks found when a process exits.

  python3 bench/soak/chaos_soak.py --build build --jobs 2000 --concurrency 8 --chaos_every 3
  python3 bench/soak/chaos_soak.py --build build-asan --minutes 30 --hostile --max_growth_mb 512

Jobs that a killed coordinator was running end with UNAVAILABLE on their stream (they die with
it); their sequences on the workers are released by the owner lease (--owner_lease_seconds).
"""

import argparse
import collections
import concurrent.futures
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration",
                                "support"))
import arbor_processes  # noqa: E402
from hostile_http import (HealthWatch, chunked, crawl_headers, deep_body,  # noqa: E402
                          post_head, raw_request)
from soak_support import decode, field, generate_request, rss_mb  # noqa: E402

LEASE_SECONDS = 3
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")
FINISH_REASONS = ["unspecified", "stop_token", "stop_string", "max_tokens", "context", "deadline",
                  "cancelled", "error"]


class Cluster:
    """A coordinator (gRPC and HTTP) on fixed ports and workers that register with it,
    restartable."""

    def __init__(self, model, workers):
        self.model = model
        self.processes = arbor_processes.Processes("arbor-chaos-")
        self.lock = threading.Lock()
        self.down_until = 0.0  # While the coordinator restarts (monotonic time).
        self.port, self.http_port = self.processes.start(
            "arbor-coordinator", "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
            *self.COORDINATOR_FLAGS, f"--model={model}",
            port_flags=("--port_file", "--http_port_file"))
        self.coordinator = self.processes.processes[-1]
        self.workers, self.worker_ports = [], []
        self.unclean_exits = []  # (binary, exit code) of processes stopped with SIGTERM.
        for _ in range(workers):
            process, port = self._start_worker("127.0.0.1:0")
            self.workers.append(process)
            self.worker_ports.append(port)

    COORDINATOR_FLAGS = ("--heartbeat_ms=500", "--finished_jobs=200", "--log_level=warn",
                         f"--http_max_body_bytes={256 * 1024}")

    def _start_worker(self, listen):
        (port,) = self.processes.start(
            "arbor-worker", f"--listen={listen}", f"--model={self.model}",
            f"--coordinator=127.0.0.1:{self.port}", f"--owner_lease_seconds={LEASE_SECONDS}",
            "--kv_tokens=4096", "--drain_seconds=5", "--log_level=warn")
        return self.processes.processes[-1], port

    def restart_worker(self, i, sig):
        with self.lock:
            self.workers[i].send_signal(sig)
            code = self.workers[i].wait(timeout=30)
            if sig == signal.SIGTERM and code != 0:
                self.unclean_exits.append(("arbor-worker", code))
            self.workers[i], _ = self._start_worker(f"127.0.0.1:{self.worker_ports[i]}")

    def restart_coordinator(self):
        with self.lock:
            self.down_until = time.monotonic() + 60
            self.coordinator.send_signal(signal.SIGKILL)
            self.coordinator.wait(timeout=30)
            self.processes.start("arbor-coordinator", f"--listen=127.0.0.1:{self.port}",
                                 f"--http_listen=127.0.0.1:{self.http_port}",
                                 *self.COORDINATOR_FLAGS, f"--model={self.model}")
            self.coordinator = self.processes.processes[-1]
            self.down_until = time.monotonic() + 1  # Its first answers after the restart.

    def coordinator_down(self):
        return time.monotonic() < self.down_until

    def freeze_worker(self, i, seconds):
        """SIGSTOP for `seconds`, then SIGCONT: a hung worker its jobs must move off."""
        with self.lock:
            worker = self.workers[i]
            worker.send_signal(signal.SIGSTOP)
        time.sleep(seconds)
        worker.send_signal(signal.SIGCONT)

    def stop_all(self):
        """SIGTERM to every live process; records those that do not exit 0."""
        with self.lock:
            live = [p for p in self.processes.processes if p.poll() is None]
            for p in live:
                p.terminate()
            for p in live:
                code = p.wait(timeout=60)
                if code != 0:
                    self.unclean_exits.append((os.path.basename(p.args[0]), code))

    def sanitizer_reports(self):
        """The first line of each sanitizer report in the processes' logs."""
        reports = []
        for i in range(len(self.processes.processes)):
            for line in self.processes.log(i).splitlines():
                if any(marker in line for marker in SANITIZER_MARKERS):
                    reports.append(f"log-{i}: {line.strip()}")
        return reports

    def drain(self, i):
        channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        call = channel.unary_unary("/arbor.v1.Cluster/DrainWorker")
        try:
            call(field(1, f"127.0.0.1:{self.worker_ports[i]}".encode()), timeout=5)
        except grpc.RpcError:
            pass  # Not registered yet (restarting): nothing to drain.
        channel.close()

    def worker_health(self, i):
        """(live sequences, used blocks) of worker i."""
        channel = grpc.insecure_channel(f"127.0.0.1:{self.worker_ports[i]}")
        answer = channel.unary_unary("/arbor.v1.Worker/Health")(b"", timeout=5)
        channel.close()
        health = decode(answer)
        cache = decode(health.get(5, [b""])[0])
        return health.get(2, [0])[0], cache.get(2, [0])[0]


def run_job(cluster, seed, outcomes):
    """One job to its end; retried (as clients should) while the coordinator is unreachable or
    has no ready worker, but not once it has streamed an event."""
    rng = random.Random(seed)
    deadline_ms = rng.choice([0, 0, 0, 300, 2000])
    cancel_after = rng.choice([None, None, None, 0.05, 0.3])
    request = generate_request(seed, "tokens", rng.randrange(8, 200), rng.randrange(4, 256),
                               deadline_ms)
    for attempt in range(100):
        channel = grpc.insecure_channel(f"127.0.0.1:{cluster.port}")
        call = channel.unary_stream("/arbor.v1.Generation/Generate")(request, timeout=120)
        if cancel_after is not None:
            threading.Timer(cancel_after, call.cancel).start()
        last = b""
        try:
            for event in call:
                last = event
            finished = decode(decode(last).get(8, [b""])[0]) if last else {}
            outcome = FINISH_REASONS[finished.get(1, [0])[0]] if finished else "no final event"
        except grpc.RpcError as error:
            outcome = error.code().name
            if outcome == "UNAVAILABLE" and last:
                outcome = "lost with its coordinator"
        channel.close()
        if outcome != "UNAVAILABLE":
            break
        time.sleep(0.2)
    with cluster.lock:
        outcomes[outcome] += 1


class MemoryWatch:
    """Samples the resident memory of every live process of the cluster: first and peak."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.first, self.peak = {}, {}  # pid -> MB
        self.role = {}                  # pid -> binary name

    def sample(self):
        with self.cluster.lock:
            live = [p for p in self.cluster.processes.processes if p.poll() is None]
        for p in live:
            try:
                mb = rss_mb(p.pid)
            except (OSError, ValueError):
                continue  # Exited meanwhile.
            self.first.setdefault(p.pid, mb)
            self.peak[p.pid] = max(self.peak.get(p.pid, 0.0), mb)
            self.role[p.pid] = os.path.basename(p.args[0])

    def run(self, stop):
        while not stop.wait(0.5):
            self.sample()

    def growth(self):
        """(role, pid, first MB, peak MB) per process, largest growth first."""
        rows = [(self.role[pid], pid, self.first[pid], self.peak[pid]) for pid in self.peak]
        return sorted(rows, key=lambda r: r[3] - r[2], reverse=True)


def chaos(cluster, stop, every, freeze_seconds, log):
    rng = random.Random(1)
    while not stop.wait(every):
        action = rng.choice(["kill_worker", "term_worker", "drain", "kill_coordinator",
                             "freeze_worker"])
        i = rng.randrange(len(cluster.workers))
        if action == "freeze_worker":
            cluster.freeze_worker(i, freeze_seconds)
        elif action == "kill_worker":
            cluster.restart_worker(i, signal.SIGKILL)
        elif action == "term_worker":
            cluster.restart_worker(i, signal.SIGTERM)
        elif action == "drain":
            cluster.drain(i)
            time.sleep(1)
            cluster.restart_worker(i, signal.SIGTERM)
        else:
            cluster.restart_coordinator()
        log[action] += 1


# Each attack and the statuses that answer it correctly (None: the connection was closed).
ATTACKS = {
    "deep_nesting": ({400}, lambda port: raw_request(
        port, post_head(len(deep_body(100000))) + deep_body(100000))),
    "chunked_over_limit": ({413, None}, lambda port: raw_request(
        port, post_head(), chunked(b'{"prompt":"' + b"x" * (1 << 20) + b'"}'))),
    "million_stop_ids": ({400, 413}, lambda port: raw_request(
        port, post_head(len(MILLION_STOP_IDS)) + MILLION_STOP_IDS)),
    "abandoned_body": ({None}, lambda port: raw_request(
        port, post_head(64), [b'{"prompt":'], 0.0, read=False)),
}
MILLION_STOP_IDS = ('{"prompt":"hi","arbor":{"stop_token_ids":[' + ",".join(["1"] * 1000000) +
                    ']}}').encode()


def hostile(cluster, stop, log, failures):
    """Runs the attacks in turn, with 100 slowloris connections held open all along."""
    def keep_crawling():
        while not stop.is_set():
            crawl_headers(cluster.http_port, post_head(), stop, 0.5)

    crawlers = [threading.Thread(target=keep_crawling, daemon=True) for _ in range(100)]
    for t in crawlers:
        t.start()
    while not stop.wait(0.5):
        for name, (expected, attack) in ATTACKS.items():
            try:
                status = attack(cluster.http_port)
            except OSError as e:
                status = f"{type(e).__name__}"
            if status not in expected and not cluster.coordinator_down():
                failures.append(f"{name}: answered {status}, expected one of {expected}")
            log[name] += 1
    for t in crawlers:
        t.join()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chaos_every", type=float, default=3.0, help="seconds between faults")
    parser.add_argument("--minutes", type=float, default=0,
                        help="run for this long instead of --jobs jobs")
    parser.add_argument("--hostile", action="store_true",
                        help="attack the HTTP gateway all along and watch /health")
    parser.add_argument("--freeze_seconds", type=float, default=12.0,
                        help="how long a SIGSTOP keeps a worker frozen")
    parser.add_argument("--max_growth_mb", type=float, default=64.0,
                        help="fail when a process's resident memory grows more than this over "
                             "its life (an ASan build needs more: its quarantine holds freed "
                             "memory, 256 MB by default)")
    args = parser.parse_args()

    arbor_processes.BIN = os.path.join(args.build, "bin")
    model = tempfile.mkdtemp(prefix="arbor-chaos-model-")
    subprocess.run([os.path.join(arbor_processes.BIN, "arbor"), "make-model", "--preset=tiny",
                    f"--out={model}"], check=True, stdout=subprocess.DEVNULL)
    cluster = Cluster(model, args.workers)
    ok = True
    try:
        time.sleep(2)  # Registration.
        outcomes, faults = collections.Counter(), collections.Counter()
        attacks, attack_failures = collections.Counter(), []
        stop = threading.Event()
        threads = [threading.Thread(target=chaos, args=(cluster, stop, args.chaos_every,
                                                         args.freeze_seconds, faults))]
        memory = MemoryWatch(cluster)
        threads.append(threading.Thread(target=memory.run, args=(stop,)))
        watch = None
        if args.hostile:
            threads.append(threading.Thread(target=hostile,
                                            args=(cluster, stop, attacks, attack_failures)))
            watch = HealthWatch(f"http://127.0.0.1:{cluster.http_port}", cluster.coordinator_down,
                                any_answer=True)
        for t in threads:
            t.start()
        start = time.monotonic()
        jobs = 0
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            pending = set()
            while (time.monotonic() - start < args.minutes * 60 if args.minutes
                   else jobs < args.jobs):
                if len(pending) >= 2 * args.concurrency:
                    done, pending = concurrent.futures.wait(
                        pending, return_when=concurrent.futures.FIRST_COMPLETED)
                    for future in done:
                        future.result()
                jobs += 1
                pending.add(pool.submit(run_job, cluster, jobs, outcomes))
            for future in pending:
                future.result()
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        answered = sum(outcomes.values())
        print(f"{jobs} jobs in {elapsed:.0f} s, faults {dict(faults)}")
        print(f"outcomes: {dict(outcomes)}")
        if answered != jobs or outcomes["no final event"]:
            print(f"FAIL: {jobs - answered} jobs without an answer")
            ok = False
        if watch is not None:
            watch.finish()
            print(f"attacks: {dict(attacks)}; /health slowest {watch.slowest:.3f} s while up, "
                  f"{len(watch.failures)} failures")
            for failure in (attack_failures + watch.failures)[:20]:
                print(f"  {failure}")
            if attack_failures or watch.failures or watch.slowest > 1.0:
                print("FAIL: an attack was answered wrongly or /health was slow or down")
                ok = False
        # Every worker's KV back to zero: released by the jobs, or by the lease of a dead
        # coordinator's epoch.
        deadline = time.monotonic() + LEASE_SECONDS + 10
        while True:
            health = [cluster.worker_health(i) for i in range(len(cluster.workers))]
            if all(h == (0, 0) for h in health) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        print(f"workers (live sequences, used blocks) at the end: {health}")
        if any(h != (0, 0) for h in health):
            print("FAIL: KV not back to baseline")
            ok = False
        memory.sample()
        growth = memory.growth()
        for role in ("arbor-coordinator", "arbor-worker"):
            rows = [r for r in growth if r[0] == role]
            if rows:
                _, pid, first, peak = rows[0]
                print(f"{role}: {len(rows)} processes; largest growth {peak - first:.1f} MB "
                      f"({first:.1f} -> {peak:.1f} MB, pid {pid}); highest peak "
                      f"{max(r[3] for r in rows):.1f} MB")
        over = [r for r in growth if r[3] - r[2] > args.max_growth_mb]
        if over:
            print(f"FAIL: {len(over)} processes grew more than {args.max_growth_mb} MB: {over}")
            ok = False
        cluster.stop_all()
        if cluster.unclean_exits:
            print(f"FAIL: processes stopped with SIGTERM exited non-zero: {cluster.unclean_exits}")
            ok = False
        reports = cluster.sanitizer_reports()
        print(f"sanitizer reports: {len(reports)}")
        for line in reports[:20]:
            print(f"  {line}")
        if reports:
            ok = False
    finally:
        cluster.processes.stop()
        shutil.rmtree(model, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
