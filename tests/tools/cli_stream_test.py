"""`arbor generate` and `arbor watch` against real processes: what the terminal shows is the job's
committed text.

A worker on a `tiny` checkpoint and a coordinator run on loopback (port 0, port files). The
request's policy (--policy_file) makes the tiny model's steps either HELV (an insert, every third
token at most) or HEHV (a backspace and a re-draw), so every job both retracts tokens and inserts
them. The streamed stdout (the summary goes to stderr) must equal the committed text GetJob reports
(`arbor job --json`), escaped as the terminal view escapes it; before the stream went through the
committed-text filter it showed every backspaced token and none of the inserted ones.
"""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration",
                                "support"))
from arbor_processes import BIN, Processes  # noqa: E402

ARBOR = os.path.join(BIN, "arbor")

# Rows 1 and 3 never match; row 2 (HELV: H > 5, V < 0.1) inserts; everything else is row 4
# (HEHV) and backspaces. Limits high enough that both keep happening over 40 tokens.
BACKSPACE_AND_INSERT = {
    "mode": "POLICY_MODE_SEARCH",
    "thresholds": {"lelvEntropy": 0, "lelvVarentropy": 0, "helvEntropy": 5,
                   "helvVarentropy": 0.1, "lehvVarentropy": 4096, "hehvEntropy": 0,
                   "hehvVarentropy": 0},
    "insert": {"cooldown": 2, "maxPerJob": 64},
    "backspace": {"maxPerJob": 64},
}

SUMMARY = re.compile(r"\njob (\S+) finished: ")


def flow_text(text):
    """The terminal's rendering of committed text (views/tree_display.h FlowTokenText):
    newlines kept, backslash and other control characters escaped."""
    out = []
    for ch in text:
        c = ord(ch)
        if ch == "\n":
            out.append(ch)
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif c < 0x20 or c == 0x7F:
            out.append(f"\\x{c:02x}")
        elif 0x80 <= c <= 0x9F:
            out.append(f"\\u{c:04x}")
        else:
            out.append(ch)
    return "".join(out)


class CliStreamTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-cli-")
        model = os.path.join(cls.processes.dir, "tiny")
        subprocess.run([ARBOR, "make-model", "--preset=tiny", f"--out={model}"], check=True,
                       capture_output=True)
        [worker] = cls.processes.start("arbor-worker", f"--model={model}", "--threads=1",
                                       "--kv_tokens=16384", "--listen=127.0.0.1:0")
        [port] = cls.processes.start("arbor-coordinator", f"--model={model}",
                                     "--listen=127.0.0.1:0", f"--workers=127.0.0.1:{worker}")
        cls.coordinator = f"127.0.0.1:{port}"
        cls.policy = os.path.join(cls.processes.dir, "policy.json")
        with open(cls.policy, "w") as f:
            json.dump(BACKSPACE_AND_INSERT, f)
        deadline = time.monotonic() + 30  # Ready once the worker answered its first health poll.
        while "WORKER_STATE_READY" not in cls.arbor("workers", "--json").stdout:
            if time.monotonic() > deadline:
                raise TimeoutError("the coordinator never saw its worker ready")
            time.sleep(0.1)

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    @classmethod
    def arbor(cls, *args):
        return subprocess.run([ARBOR, *args, f"--coordinator={cls.coordinator}"],
                              capture_output=True, text=True, timeout=120)

    def generate(self, seed, *flags):
        out = self.arbor("generate", "--prompt=Hello", "--max_tokens=40", f"--seed={seed}",
                         f"--policy_file={self.policy}", *flags)
        self.assertEqual(out.returncode, 0, out.stderr)
        # The answer alone on stdout, ended by a newline; the summary on stderr.
        self.assertTrue(out.stdout.endswith("\n"), out.stdout)
        self.assertIsNone(SUMMARY.search(out.stdout), out.stdout)
        summary = SUMMARY.search("\n" + out.stderr)
        self.assertTrue(summary, out.stderr)
        return out.stdout[:-1], summary

    def job(self, job_id):
        out = self.arbor("job", job_id, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_streamed_text_is_the_committed_text(self):
        for seed in (7, 11, 23):
            with self.subTest(seed=seed):
                streamed, summary = self.generate(seed)
                job = self.job(summary.group(1))
                self.assertGreater(job["strategies"].get("backspace", 0), 0, "no backspace")
                self.assertGreater(job["strategies"].get("insert", 0), 0, "no insert")
                self.assertEqual(streamed, flow_text(job["text"]))
                # Watching the finished job replays its events: the same text again.
                watch = self.arbor("watch", summary.group(1))
                self.assertEqual(watch.returncode, 0, watch.stderr)
                self.assertEqual(watch.stdout[:-1], streamed)

    def test_json_schema_answers_follow_the_schema_through_backspaces(self):
        schema = os.path.join(self.processes.dir, "schema.json")
        with open(schema, "w") as f:
            json.dump({"type": "object", "additionalProperties": False, "required": ["a", "b"],
                       "properties": {"a": {"type": "integer"},
                                      "b": {"type": "array", "items": {"type": "boolean"}}}}, f)
        finished = 0
        for seed in (7, 11, 23, 31, 43):
            out = self.arbor("generate", "--prompt=Hello", "--max_tokens=200", f"--seed={seed}",
                             f"--policy_file={self.policy}", f"--json_schema={schema}")
            self.assertEqual(out.returncode, 0, out.stderr)
            job = self.job(SUMMARY.search("\n" + out.stderr).group(1))
            self.assertNotIn("insert", job["strategies"])  # A thinking token is no JSON.
            if job["finishReason"] != "FINISH_REASON_STOP_TOKEN":
                continue
            self.assertGreater(job["strategies"].get("backspace", 0), 0, "no backspace")
            document = json.loads(job["text"])
            self.assertEqual(list(document), ["a", "b"])
            self.assertIsInstance(document["a"], int)
            self.assertTrue(all(isinstance(x, bool) for x in document["b"]), document)
            finished += 1
        self.assertGreater(finished, 0, "no constrained answer finished within max_tokens")
        out = self.arbor("generate", "--prompt=Hello", "--json_object", f"--json_schema={schema}")
        self.assertEqual(out.returncode, 2)
        self.assertIn("--json_schema: give --json_schema or --json_object, not both", out.stderr)

    def test_metrics_table_shows_every_retraction_then_the_committed_text(self):
        stdout, summary = self.generate(7, "--show_metrics")
        job = self.job(summary.group(1))
        rows = stdout.split("\n")
        self.assertTrue(rows[0].startswith("  pos strategy       token"), rows[0])
        backspaces = [r for r in rows if r[5:].startswith(" backspace ")]
        inserts = [r for r in rows if r[5:].startswith(" INSERT ")]
        self.assertEqual(len(backspaces), job["strategies"]["backspace"])
        self.assertEqual(len(inserts), job["strategies"]["insert"])
        # The table ends with a blank line, then the committed text.
        blank = rows.index("")
        self.assertEqual("\n".join(rows[blank + 1:]), flow_text(job["text"]))


if __name__ == "__main__":
    unittest.main()
