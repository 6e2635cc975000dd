"""`arbor up --worker_args="..."`: the flags reach every worker it starts, after the ones it
chooses itself; a worker that refuses one stops `arbor up` with the worker's own error; words
that are not flags, and the flags by which `arbor up` finds its workers, are refused up front.
"""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from arbor_processes import BIN, start_arbor_up  # noqa: E402  (path set above)


def children_args(parent):
    """The command lines of `parent`'s child processes, from /proc."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found.append(f.read().decode().split("\0")[:-1])
        except (OSError, IndexError, ValueError):
            continue  # Gone meanwhile.
    return found


UP_FLAGS = ["--model=tiny", "--port=0", "--http_port=-1"]


def up(*flags):
    return [os.path.join(BIN, "arbor"), "up", *UP_FLAGS, *flags]


class UpWorkerArgsTest(unittest.TestCase):

    def test_the_flags_reach_every_worker_after_its_own(self):
        process, _ = start_arbor_up(
            self, UP_FLAGS + ["--num_workers=2", "--worker_args=--share_linger_ms=0  --threads=1"])
        workers = [a for a in children_args(process.pid) if a[0].endswith("arbor-worker")]
        self.assertEqual(len(workers), 2, workers)
        for args in workers:
            self.assertIn("--share_linger_ms=0", args)
            # After the --threads arbor up chose, so that the one given wins.
            threads = [i for i, a in enumerate(args) if a.startswith("--threads=")]
            self.assertEqual(len(threads), 2, args)
            self.assertEqual(args[threads[-1]], "--threads=1")

    def test_a_flag_the_worker_refuses_stops_up_with_its_error(self):
        out = subprocess.run(up("--num_workers=1", "--worker_args=--no_such_flag=1"),
                             capture_output=True, text=True, timeout=90)
        self.assertNotEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("no_such_flag", out.stderr)

    def test_words_and_flags_up_sets_itself_are_refused(self):
        for given, said in [("oops", "'oops' is not a flag"),
                            ("--threads=1 --listen=127.0.0.1:1", "--listen is set by arbor up"),
                            ("--model=other.gguf", "--model is set by arbor up")]:
            out = subprocess.run(up(f"--worker_args={given}"), capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
            self.assertIn(said, out.stderr)


if __name__ == "__main__":
    unittest.main()
