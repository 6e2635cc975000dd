#!/usr/bin/env python3
"""Coordinator memory over many jobs: starts a coordinator and one worker on a tiny synthetic
model (loopback, free ports), streams N Generate jobs at concurrency C through it and prints the
coordinator's resident memory every `--every` jobs, so growth after the finished-job cache is
full shows up. Requests are hand-encoded protobuf bytes: only grpcio is needed.

  python3 bench/soak/rss_soak.py --build build --jobs 5000 --concurrency 8 --every 500 \\
      --prompt text --words 100 --max_tokens 16 --finished_jobs 200

`--prompt text` sends fresh random words (the tokenizer's word cache sees every one once);
`--prompt tokens` sends random token ids (no tokenizer work).
"""

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration",
                                "support"))
import arbor_processes  # noqa: E402
from soak_support import generate_request, rss_mb  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="build directory (its bin/ is used)")
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--prompt", choices=["text", "tokens"], default="text")
    parser.add_argument("--words", type=int, default=100, help="words (or token ids) per prompt")
    parser.add_argument("--max_tokens", type=int, default=16)
    parser.add_argument("--finished_jobs", type=int, default=200)
    args = parser.parse_args()

    arbor_processes.BIN = os.path.join(args.build, "bin")
    model = tempfile.mkdtemp(prefix="arbor-soak-model-")
    subprocess.run([os.path.join(arbor_processes.BIN, "arbor"), "make-model", "--preset=tiny",
                    f"--out={model}"], check=True, stdout=subprocess.DEVNULL)
    processes = arbor_processes.Processes("arbor-soak-")
    try:
        (port,) = processes.start("arbor-coordinator", "--listen=127.0.0.1:0", f"--model={model}",
                                  f"--finished_jobs={args.finished_jobs}", "--log_level=warn")
        coordinator = processes.processes[-1].pid
        processes.start("arbor-worker", "--listen=127.0.0.1:0", f"--model={model}",
                        f"--coordinator=127.0.0.1:{port}", "--log_level=warn")
        def request(seed):
            return generate_request(seed, args.prompt, args.words, args.max_tokens)

        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        generate = channel.unary_stream("/arbor.v1.Generation/Generate")
        deadline = time.monotonic() + 30
        while True:  # Until the worker has registered.
            try:
                for _ in generate(request(0), timeout=30):
                    pass
                break
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

        def one(i):
            for _ in generate(request(i + 1), timeout=120):
                pass

        start = time.monotonic()
        print(f"0 jobs rss {rss_mb(coordinator):.1f} MB", flush=True)
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            for base in range(0, args.jobs, args.every):
                list(pool.map(one, range(base, min(args.jobs, base + args.every))))
                print(f"{min(args.jobs, base + args.every)} jobs "
                      f"{time.monotonic() - start:.1f} s rss {rss_mb(coordinator):.1f} MB",
                      flush=True)
    finally:
        processes.stop()
        shutil.rmtree(model, ignore_errors=True)


if __name__ == "__main__":
    main()
