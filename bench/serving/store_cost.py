#!/usr/bin/env python3
"""The job store's cost: served tokens/s with --job_store=none, sqlite and postgres.

Starts one arbor-worker and one arbor-coordinator per store on it (HTTP gateways on loopback):
`none`, `sqlite:FILE` (WAL, synchronous=FULL) in a temporary folder, and `postgres:CONNINFO` on
a PostgreSQL server of its own started as the integration tests start theirs
(tests/integration/support/postgres_server.py), but with fsync on, as a production server
commits. Then it runs bench/serving/load_bench.py once per round over the three (greedy, 16
streams by default), in an order that rotates from round to round (none sqlite postgres, then
sqlite postgres none, ...), so that drift and the worker's prefix cache, warmed by whichever
runs first, hit every store alike. Before each round it waits, up to --quiet_wait seconds, until
no compiler (cc1plus) runs on the machine, and marks the rounds that had one running at their
start or end. It prints
each round's tokens/s and TTFT p50 per store, and the median, spread and cost of each store
against none over the rounds.

Tokens/s on a small shared machine drifts by more than the store costs, so it also counts the
CPU each store spends: the CPU seconds (user + system, from /proc) of that store's coordinator
and, for postgres, of the PostgreSQL server's processes, per generated token, against none's
coordinator and the worker over the same store's load. A store's CPU cost is its extra CPU per
token over none's, as a share of none's whole CPU per token (coordinator and worker): on a
machine whose cores the serving saturates, that is the throughput it takes. Run it with the
project virtualenv:

  .venv/bin/python bench/serving/store_cost.py --build build --rounds 6
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "support"))
import arbor_processes  # noqa: E402
import postgres_server  # noqa: E402

MODEL = os.path.expanduser("~/.cache/arbor/models/SmolLM2-135M-Instruct.Q4_1.gguf")
STORES = ("none", "sqlite", "postgres")


def compiling():
    return subprocess.run(["pgrep", "cc1plus"], capture_output=True).returncode == 0


def wait_quiet(seconds):
    """Waits until no compiler runs, up to `seconds`; returns whether one still does."""
    deadline = time.monotonic() + seconds
    while compiling() and time.monotonic() < deadline:
        time.sleep(2)
    return compiling()


def stat(pid):
    """The fields of /proc/PID/stat after the command name (state first); None once gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def cpu_seconds(pids):
    """User + system CPU seconds the live processes `pids` used so far, with those of their
    exited children they waited for."""
    total = 0
    for fields in filter(None, map(stat, pids)):
        total += sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def tree_cpu(root):
    """CPU seconds of process `root` and all its descendants (the PostgreSQL server, which may
    run under a user-switching parent, and the backends it starts)."""
    parents = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        fields = stat(entry)
        if fields is not None:
            parents[int(entry)] = int(fields[1])
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return cpu_seconds(tree)


def start(processes, args, conninfo):
    """The worker and a coordinator per store; returns {store: HTTP base URL}."""
    worker, = processes.start("arbor-worker", f"--model={args.model}", "--listen=127.0.0.1:0",
                              f"--threads={args.threads}", "--kv_memory=1GiB")
    flags = {"none": "none", "sqlite": f"sqlite:{os.path.join(processes.dir, 'jobs.db')}",
             "postgres": f"postgres:{conninfo}"}
    bases = {}
    for store in STORES:
        _, port = processes.start(
            "arbor-coordinator", f"--model={args.model}", "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", f"--workers=127.0.0.1:{worker}",
            f"--job_store={flags[store]}", f"--coordinator_id={store}",
            port_flags=("--port_file", "--http_port_file"))
        bases[store] = f"http://127.0.0.1:{port}"
        arbor_processes.wait_ready(bases[store], timeout=120)
    return bases


def one_round(args, bases, order, out, pids):
    """load_bench.py over each store of `order` in turn; returns {store: summary row}, each row
    with the CPU seconds the store's front (`front_cpu_s`: its coordinator, and the PostgreSQL
    server for postgres) and the worker (`worker_cpu_s`) spent on it."""
    rows = {}
    for store in order:
        command = [sys.executable, os.path.join(HERE, "load_bench.py"), "--streams",
                   str(args.streams), "--requests", str(args.requests), "--rounds", "1",
                   "--max_tokens", str(args.max_tokens), "--json", out,
                   "--server", f"{store}={bases[store]}", "--policy", f"{store}=greedy"]

        def front():
            used = cpu_seconds([pids[store]])
            return used + (tree_cpu(pids["postgres_server"]) if store == "postgres" else 0)

        front_before, worker_before = front(), cpu_seconds([pids["worker"]])
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            row = json.load(f)["results"][0]
        row["front_cpu_s"] = front() - front_before
        row["worker_cpu_s"] = cpu_seconds([pids["worker"]]) - worker_before
        rows[store] = row
    return rows


def cpu_per_token(row, key):
    return row[key] / (row["tokens_per_s"] * row["wall_s"])


def report_cpu(rounds):
    """Per store: CPU ms per token of its front, and its extra CPU over none's as a share of
    none's whole CPU per token, per round and the median."""
    for s in STORES:
        fronts = [1e3 * cpu_per_token(r[s], "front_cpu_s") for _, _, r in rounds]
        line = f"{s}: front CPU {statistics.median(fronts):.3f} ms/token (median)"
        if s != "none":
            costs = [100 * (cpu_per_token(r[s], "front_cpu_s") -
                            cpu_per_token(r["none"], "front_cpu_s")) /
                     (cpu_per_token(r["none"], "front_cpu_s") +
                      cpu_per_token(r["none"], "worker_cpu_s")) for _, _, r in rounds]
            line += (f"; CPU cost against none: median {statistics.median(costs):+.2f} % "
                     f"(rounds {min(costs):+.2f} to {max(costs):+.2f} %)")
        print(line)


def report(rounds):
    """The rounds' table and, per store, median tok/s, spread and cost against none."""
    print("| round | order | beside a compiler | " +
          " | ".join(f"{s} tok/s (TTFT p50 ms)" for s in STORES) + " |")
    print("|---|---|---|" + "---|" * len(STORES))
    for i, (order, busy, rows) in enumerate(rounds, 1):
        cells = [f"{rows[s]['tokens_per_s']:.0f} ({rows[s]['ttft_ms']['p50']:.0f})"
                 for s in STORES]
        print(f"| {i} | {' '.join(order)} | {'yes' if busy else 'no'} | {' | '.join(cells)} |")
    medians = {s: statistics.median(r[s]["tokens_per_s"] for _, _, r in rounds) for s in STORES}
    for s in STORES:
        values = [r[s]["tokens_per_s"] for _, _, r in rounds]
        ratios = [r[s]["tokens_per_s"] / r["none"]["tokens_per_s"] for _, _, r in rounds]
        print(f"{s}: median {medians[s]:.0f} tok/s (rounds {min(values):.0f}-{max(values):.0f}); "
              f"cost against none: {100 * (1 - medians[s] / medians['none']):+.1f} % of the "
              f"medians, per round {100 * (1 - max(ratios)):+.1f} to "
              f"{100 * (1 - min(ratios)):+.1f} %")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="the build folder (its bin/)")
    parser.add_argument("--model", default=MODEL,
                        help="the model file (default: `arbor up`'s SmolLM2-135M-Instruct)")
    parser.add_argument("--threads", type=int, default=2, help="the worker's threads")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--requests", type=int, default=4, help="requests per stream a round")
    parser.add_argument("--max_tokens", type=int, default=64)
    parser.add_argument("--quiet_wait", type=float, default=300,
                        help="seconds to wait before a round for no compiler to run")
    args = parser.parse_args()
    bin_dir = postgres_server.find_binaries()
    if bin_dir is None:
        sys.exit("PostgreSQL's server binaries are absent: install the postgresql package")
    arbor_processes.BIN = os.path.join(os.path.abspath(args.build), "bin")
    postgres = postgres_server.PostgresServer(bin_dir, fsync=True)
    processes = arbor_processes.Processes(prefix="arbor-store-cost-")
    rounds = []
    try:
        bases = start(processes, args, postgres.conninfo)
        pids = dict(zip(("worker",) + STORES, (p.pid for p in processes.processes)))
        pids["postgres_server"] = postgres.process.pid
        out = os.path.join(tempfile.mkdtemp(dir=processes.dir), "round.json")
        for i in range(args.rounds):
            order = STORES[i % len(STORES):] + STORES[:i % len(STORES)]
            busy = wait_quiet(args.quiet_wait)
            rows = one_round(args, bases, order, out, pids)
            rounds.append((order, busy or compiling(), rows))
            print(f"round {i + 1}/{args.rounds} done ({' '.join(order)})", file=sys.stderr)
    finally:
        processes.stop()
        postgres.stop()
    report(rounds)
    report_cpu(rounds)


if __name__ == "__main__":
    main()
