"""Coordinators SIGKILLed again and again under streaming load lose no accepted job.

A PostgreSQL server started by the test holds the job store; two real arbor-coordinators (2 s
leases renewed every 0.4 s) share it and two real arbor-workers on a random `tiny` checkpoint,
with the real smg gateway (`smg launch --policy cache_aware`) in front of their HTTP gateways.
Six client threads stream jobs all along — gRPC Generate and Submit + Watch, Submit + GET
/v1/jobs/{id}/events, and streamed chat completions through smg; greedy and branching SEARCH —
while a coordinator is SIGKILLed every 2 s: four times started again under its id, once for
good and replaced under a new id. Then no accepted job may be lost (each FINISHED on both
coordinators), each job's text, token ids and tree must equal those of its request run
uninterrupted, every reconnecting client must have got each event exactly once, and some
stream must have been broken and resumed. The long form is bench/soak/coordinator_chaos.py;
both run tests/integration/support/chaos_run.py. Run by ctest with the project virtualenv;
ARBOR_BINARY_DIR and ARBOR_SOURCE_DIR point at the build and the sources.
"""

import os
import sys
import unittest

try:
    import grpc  # noqa: F401
    from google import protobuf  # noqa: F401
except ImportError as e:  # The dependency script installs them; without them nothing to test.
    print(f"{e.name} is not installed in this Python; skipping")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "support"))
sys.path.insert(0, os.path.join(HERE, "..", "support"))  # tests/support
import chaos_run  # noqa: E402
import postgres_server  # noqa: E402
import smg_gateway  # noqa: E402
from test_seed import test_seed  # noqa: E402

KILLS = 5

if postgres_server.find_binaries() is None:
    print("PostgreSQL's server binaries are absent (no /usr/lib/postgresql/N/bin/initdb): "
          "install the postgresql package (scripts/install-deps.sh); skipping")
    sys.exit(77)


def say(line):
    print(line, file=sys.stderr, flush=True)


class CoordinatorChaosTest(unittest.TestCase):
    def test_kills_lose_change_and_repeat_nothing(self):
        stack = chaos_run.Stack("arbor-coordinator-chaos-")
        self.addCleanup(stack.close)
        report = chaos_run.run(stack, kills=KILLS, every=2, threads=6, pool_size=4,
                               max_tokens=1000, seed=test_seed(self), say=say)
        for line in report.summary():
            say(line)
        self.assertEqual(report.failures(), [])
        self.assertEqual((len(report.kills), sum(k.for_good for k in report.kills)), (KILLS, 1))
        self.assertGreater(report.resumed(), 0, "no kill broke a stream that then resumed")
        roles = {seen.role for seen in report.accepted}
        self.assertLessEqual({"generate", "watch", "sse"}, roles)
        if stack.gateway is None:
            self.skipTest(f"{smg_gateway.SMG} is missing (scripts/install-deps.sh installs smg "
                          "into the venv): ran without the gateway and its chat clients")
        self.assertIn("chat", roles)


if __name__ == "__main__":
    unittest.main()
