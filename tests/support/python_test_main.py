"""Runs a Python test file as ctest should see it: a skip is a skip, not a pass.

Usage: python_test_main.py SCRIPT [ARGS...]   (cmake/ArborTesting.cmake's arbor_add_python_test)

SCRIPT runs as __main__, as `python SCRIPT ARGS` would run it, with one difference: the
unittest.main() it calls exits 77 (ctest's SKIP_RETURN_CODE for these tests) when a test was
skipped — by skipTest, a skip decorator or SkipTest raised in setUpClass — and none failed,
after printing each skipped test with its reason ("SKIPPED <test>: <reason>", which
scripts/test-skips.py reads back). Plain unittest exits 0 then, and a suite that ran half its
tests would pass. A SkipTest raised at the script's top level is a skip too; a script's own
sys.exit (77 when it cannot run at all) passes through unchanged. Standard library only: a
fresh virtualenv runs it too (tests/clients/fresh_venv_test.py).
"""

import os
import runpy
import sys
import unittest

SKIP_EXIT = 77


def report_skips(skipped):
    """Prints what was skipped and why, on stderr where unittest writes (the order holds)."""
    for test, reason in skipped:
        name = test.id().replace("__main__.", "")
        print(f"SKIPPED {name}: {reason}", file=sys.stderr, flush=True)


class TestProgram(unittest.TestProgram):
    """unittest.main, but a run with skips and no failures exits SKIP_EXIT."""

    def runTests(self):
        exit_after, self.exit = self.exit, False
        super().runTests()
        if not exit_after:
            return
        if not self.result.wasSuccessful():
            sys.exit(1)
        if self.result.skipped:
            report_skips(self.result.skipped)
            sys.exit(SKIP_EXIT)
        if self.result.testsRun == 0:
            print("no test ran", file=sys.stderr)
            sys.exit(1)
        sys.exit(0)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    script = os.path.abspath(sys.argv[1])
    # What `python SCRIPT` would see: its own folder first on the path, its own argv.
    sys.path[0] = os.path.dirname(script)
    sys.argv = sys.argv[1:]
    unittest.main = TestProgram
    try:
        runpy.run_path(script, run_name="__main__")
    except unittest.SkipTest as e:
        print(f"SKIPPED {os.path.basename(script)}: {e}", file=sys.stderr, flush=True)
        return SKIP_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())
