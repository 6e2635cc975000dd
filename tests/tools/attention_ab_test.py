"""bench/worker/ab/attention_ab.sh builds the CPU attention of a revision and of the working tree
into one program and races them: against HEAD (the same bits, checked first) it prints one row
per case named, with the rounds, both sides' median times and their ratio.
"""

import os
import re
import shutil
import subprocess
import unittest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(SOURCE, "bench", "worker", "ab", "attention_ab.sh")


def in_git_checkout():
    return shutil.which("git") is not None and subprocess.run(
        ["git", "-C", SOURCE, "rev-parse", "HEAD"], capture_output=True).returncode == 0


@unittest.skipUnless(in_git_checkout(), "the race needs the sources in a git checkout")
class AttentionAbTest(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([SCRIPT, "HEAD", *args], capture_output=True, text=True,
                              timeout=280, cwd=SOURCE)

    def test_races_head_against_the_working_tree(self):
        # A prompt on two threads and decode rows on one: small, so the test is quick.
        run = self.run_script("0.05", "3,2,1,40,40,2", "2,4,3,100,1,1")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        rows = [line.split() for line in run.stdout.splitlines() if re.match(r"^\s+\d", line)]
        self.assertEqual([row[:6] for row in rows],
                         [["3", "2", "1", "40", "40", "2"], ["2", "4", "3", "100", "1", "1"]])
        for row in rows:
            self.assertGreaterEqual(int(row[6]), 5)  # Rounds.
            self.assertGreater(float(row[7]), 0)     # Both sides' median µs.
            self.assertGreater(float(row[8]), 0)
            self.assertGreater(float(row[9]), 0)     # Their ratio.


if __name__ == "__main__":
    unittest.main()
