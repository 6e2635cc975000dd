"""The A/B races under bench/worker/ab build a routine of a revision and of the working tree into
one program and race them: against HEAD (the same bits, checked first) each prints one row per
case named, with the rounds, both sides' median times and their ratio.

attention_ab.sh races the CPU attention; repacked_ab.sh the AVX-512 VNNI kernels of the repacked
rows (on CPUs that have it).
"""

import os
import shutil
import subprocess
import unittest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RACES = os.path.join(SOURCE, "bench", "worker", "ab")


def in_git_checkout():
    return shutil.which("git") is not None and subprocess.run(
        ["git", "-C", SOURCE, "rev-parse", "HEAD"], capture_output=True).returncode == 0


def cpu_has(flag):
    with open("/proc/cpuinfo") as cpuinfo:
        return flag in cpuinfo.read().split()


@unittest.skipUnless(in_git_checkout(), "the races need the sources in a git checkout")
class AbRaceTest(unittest.TestCase):
    def race(self, script, cases, env=None):
        """Runs `script` against HEAD on `cases` (with `env` added to the environment) and checks
        one row per case: its own columns, then at least 5 rounds, both medians and the ratio
        above zero."""
        run = subprocess.run([os.path.join(RACES, script), "HEAD", "0.05", *cases],
                             capture_output=True, text=True, timeout=280, cwd=SOURCE,
                             env={**os.environ, **(env or {})})
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        lines = run.stdout.splitlines()
        header = next(i for i, line in enumerate(lines) if "base/work" in line)
        rows = [line.split() for line in lines[header + 1:]]
        columns = [case.split(",") for case in cases]
        self.assertEqual([row[:len(case)] for row, case in zip(rows, columns)], columns)
        self.assertEqual(len(rows), len(columns))
        for row, case in zip(rows, columns):
            rounds, base_us, work_us, ratio = row[len(case):len(case) + 4]
            self.assertGreaterEqual(int(rounds), 5)
            self.assertGreater(float(base_us), 0)
            self.assertGreater(float(work_us), 0)
            self.assertGreater(float(ratio), 0)

    def test_attention(self):
        # A prompt on two threads and decode rows on one: small, so the test is quick.
        self.race("attention_ab.sh", ["3,2,1,40,40,2", "2,4,3,100,1,1"])

    @unittest.skipUnless(cpu_has("avx512_vnni"), "the kernel under race needs AVX-512 VNNI")
    def test_repacked_rows(self):
        # Nibbles with unpacked spans (37 rows, 53 blocks), 5- and 8-bit weights, K-quants; one
        # row's weights streamed from memory (copies filling 8 last-level caches, two threads).
        self.race("repacked_ab.sh", ["q4,48,1696,37", "q5,32,96,9", "q8,16,64,3", "q4k,16,512,9",
                                     "q5k,8,256,1", "q6k,8,512,3", "q6k,2048,2048,1,mem"])

    @unittest.skipUnless(cpu_has("avx2"), "the kernel under race needs AVX2")
    def test_repacked_rows_on_avx2(self):
        # The 256-bit kernels, built as for an AVX2-only CPU: nibbles, 8-bit weights, K-quants.
        self.race("repacked_ab.sh", ["q4,48,1696,37", "q8,16,64,3", "q4k,16,512,9",
                                     "q6k,8,512,3"], env={"REPACKED_AB_ISA": "avx2"})

    @unittest.skipUnless(cpu_has("avx512_vnni"), "the kernel under race needs AVX-512 VNNI")
    def test_repacked_rows_rejects_a_bad_case(self):
        run = subprocess.run([os.path.join(RACES, "repacked_ab.sh"), "HEAD", "0.05", "q4,40,64,3"],
                             capture_output=True, text=True, timeout=280, cwd=SOURCE)
        self.assertEqual(run.returncode, 2)
        self.assertIn("n a multiple of 16", run.stderr)


if __name__ == "__main__":
    unittest.main()
