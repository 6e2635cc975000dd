#!/usr/bin/env python3
"""Coordinator chaos, the long form: coordinators on one job store SIGKILLed under load.

A PostgreSQL server of its own holds the job store; two arbor-coordinators (2 s leases renewed
every 0.4 s) share it and two arbor-workers on a random `tiny` checkpoint, with the smg gateway
(`smg launch --policy cache_aware`) in front of their HTTP gateways when it is installed. Client
threads stream jobs all along — gRPC Generate and Submit + Watch, Submit + GET
/v1/jobs/{id}/events, streamed chat completions through smg; greedy and branching SEARCH — and
reconnect after every break with the count of events they have. Every --every seconds a
coordinator is SIGKILLed and started again under its id after a random pause of up to two
leases; the middle kill is for good, the coordinator replaced under a new id once its lease
lapsed. At the end it checks that no accepted job was lost (each FINISHED on both
coordinators), that each job's text, token ids and tree equal its request's uninterrupted run,
and that every reconnecting client got each event exactly once; it prints the kills, the jobs,
the findings and, per kill, the longest any event stream live at it waited for its next event,
and exits 1 on any finding. tests/integration/coordinator_chaos_test.py is the short form in `make test`;
both run tests/integration/support/chaos_run.py. Run it with the project virtualenv (grpcio,
protobuf and smg; docs/RELIABILITY.md, "Coordinator chaos"):

  .venv/bin/python bench/soak/coordinator_chaos.py --build build --kills 20
"""

import argparse
import os
import random
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "support"))
os.environ.setdefault("ARBOR_SOURCE_DIR", ROOT)  # Where the stubs' .proto files are.
import arbor_processes  # noqa: E402
import chaos_run  # noqa: E402
import postgres_server  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="the build folder (its bin/)")
    parser.add_argument("--kills", type=int, default=20, help="coordinator SIGKILLs")
    parser.add_argument("--every", type=float, default=3.0,
                        help="seconds from a coordinator's return to the next kill")
    parser.add_argument("--clients", type=int, default=8, help="client threads")
    parser.add_argument("--pool", type=int, default=8,
                        help="distinct requests of each kind (greedy, search, chat)")
    parser.add_argument("--max_tokens", type=int, default=1500,
                        help="a request's max_tokens is drawn from [max_tokens / 2, max_tokens]")
    parser.add_argument("--seed", type=int, help="the run's random draws (default: fresh)")
    parser.add_argument("--no_gateway", action="store_true",
                        help="no smg and no chat clients, even when smg is installed")
    args = parser.parse_args()
    if postgres_server.find_binaries() is None:
        sys.exit("PostgreSQL's server binaries are absent (no /usr/lib/postgresql/N/bin/initdb): "
                 "install the postgresql package (scripts/install-deps.sh)")
    arbor_processes.BIN = os.path.join(os.path.abspath(args.build), "bin")
    seed = random.SystemRandom().randrange(1 << 32) if args.seed is None else args.seed
    print(f"seed {seed} (replay: --seed {seed})", flush=True)
    stack = chaos_run.Stack("arbor-coordinator-chaos-", gateway=not args.no_gateway)
    try:
        if stack.gateway is None and not args.no_gateway:
            print("smg is not installed beside this Python: no gateway, no chat clients")
        report = chaos_run.run(stack, args.kills, args.every, args.clients, args.pool,
                               args.max_tokens, seed, say=lambda line: print(line, flush=True))
    finally:
        stack.close()
    for line in report.summary():
        print(line)
    print("FAIL" if report.failures() else "PASS")
    sys.exit(1 if report.failures() else 0)


if __name__ == "__main__":
    main()
