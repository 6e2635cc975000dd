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
against none over the rounds. Run it with the project virtualenv:

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


def one_round(args, bases, order, out):
    """load_bench.py over the stores in `order`; returns {store: summary row}."""
    command = [sys.executable, os.path.join(HERE, "load_bench.py"), "--streams",
               str(args.streams), "--requests", str(args.requests), "--rounds", "1",
               "--max_tokens", str(args.max_tokens), "--json", out]
    for store in order:
        command += ["--server", f"{store}={bases[store]}", "--policy", f"{store}=greedy"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return {row["server"]: row for row in json.load(f)["results"]}


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
        out = os.path.join(tempfile.mkdtemp(dir=processes.dir), "round.json")
        for i in range(args.rounds):
            order = STORES[i % len(STORES):] + STORES[:i % len(STORES)]
            busy = wait_quiet(args.quiet_wait)
            rows = one_round(args, bases, order, out)
            rounds.append((order, busy or compiling(), rows))
            print(f"round {i + 1}/{args.rounds} done ({' '.join(order)})", file=sys.stderr)
    finally:
        processes.stop()
        postgres.stop()
    report(rounds)


if __name__ == "__main__":
    main()
