"""`arbor help COMMAND` and `arbor COMMAND --help` show that command's flags and no other's;
arbor-coordinator and arbor-worker --help show their own flags first.

Every flag the CLI defines (ABSL_FLAG in tools/, and in the flag groups it hands on to the
processes `arbor up` starts: worker/flags/, coordinator/flags/) belongs to at least one command's
help, so a new flag cannot be left out of the table in tools/arbor_main.cc; and no command's help
lists a flag the CLI does not define.
"""

import glob
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration",
                                "support"))
from arbor_processes import BIN  # noqa: E402

ARBOR = os.path.join(BIN, "arbor")
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# The CLI's own flags, and the groups it shares with the servers it starts.
CLI_FLAG_DIRS = ("tools", os.path.join("worker", "flags"), os.path.join("coordinator", "flags"))
FLAG_LINE = re.compile(r"^  --([a-z_0-9]+) \(default: ", re.MULTILINE)


def run(*args):
    return subprocess.run([ARBOR, *args], capture_output=True, text=True, timeout=30)


def tool_flags():
    """The names of the flags the CLI defines (CLI_FLAG_DIRS)."""
    names = set()
    paths = [p for d in CLI_FLAG_DIRS
             for p in glob.glob(os.path.join(SOURCE, d, "**", "*.cc"), recursive=True)]
    for path in paths:
        with open(path) as f:
            names.update(re.findall(r"ABSL_FLAG\(\s*[^,]+,\s*([a-z_0-9]+),", f.read()))
    return names


def commands():
    """The command names `arbor --help` lists."""
    out = run("--help")
    return re.findall(r"^  ([a-z-]+) ", out.stdout.split("Commands:\n")[1], re.MULTILINE)


class CommandHelpTest(unittest.TestCase):

    def test_each_command_lists_only_its_flags(self):
        defined = tool_flags()
        self.assertIn("num_workers", defined)
        listed = set()
        for name in commands():
            out = run(name, "--help")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertTrue(out.stdout.startswith(f"Usage: arbor {name}"), out.stdout)
            self.assertNotIn("(not a defined flag)", out.stdout)
            flags = set(FLAG_LINE.findall(out.stdout))
            self.assertLessEqual(flags, defined, name)
            listed |= flags
        self.assertEqual(listed, defined, "flags in no command's help")

    def test_up_shows_cluster_flags_and_not_client_ones(self):
        flags = set(FLAG_LINE.findall(run("up", "--help").stdout))
        self.assertTrue({"model", "num_workers", "http_port", "kv_memory"} <= flags, flags)
        self.assertFalse({"prompt", "strategies", "fit_mode", "preset"} & flags, flags)
        eval_flags = set(FLAG_LINE.findall(run("eval", "--help").stdout))
        self.assertIn("strategies", eval_flags)
        self.assertFalse({"num_workers", "prompt"} & eval_flags, eval_flags)

    def test_help_command_matches_help_flag(self):
        for name in ("tree", "calibrate", "generate"):
            by_command = run("help", name)
            self.assertEqual(by_command.returncode, 0, by_command.stderr)
            self.assertEqual(by_command.stdout, run(name, "--help").stdout)
        self.assertIn("Commands:", run("help").stdout)
        self.assertIn("Commands:", run("--help").stdout)

    def test_help_on_unknown_command_fails_and_lists_commands(self):
        out = run("help", "nosuch")
        self.assertEqual(out.returncode, 2)
        self.assertIn("no command 'nosuch'", out.stderr)
        self.assertIn("Commands:", out.stderr)


class ServerHelpTest(unittest.TestCase):
    """arbor-coordinator and arbor-worker list their own flags before the shared ones."""

    def test_own_flags_come_first(self):
        for binary, own in (("arbor-coordinator", "coordinator/coordinator_main.cc"),
                            ("arbor-worker", "worker/service/worker_main.cc")):
            out = subprocess.run([os.path.join(BIN, binary), "--help"], capture_output=True,
                                 text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            sections = re.findall(r"^  Flags from (\S+):", out.stdout, re.MULTILINE)
            self.assertEqual(sections[0], own, sections)
            self.assertEqual(sections.count(own), 1, sections)
            self.assertGreater(len(sections), 1, sections)  # The shared ones follow.
            self.assertIn("Shared flags:", out.stdout)
            self.assertLess(out.stdout.index("Usage:"), out.stdout.index("Shared flags:"))


if __name__ == "__main__":
    unittest.main()
