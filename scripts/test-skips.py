#!/usr/bin/env python3
"""What a ctest run skipped, and why: the end of `make test`.

    scripts/test-skips.py JUNIT_XML [LAST_TEST_LOG]

JUNIT_XML is ctest's --output-junit report, which says which tests did not run (a GTEST_SKIP()
case, a Python test file that exited 77, an executable that was not built); LAST_TEST_LOG
(build/Testing/Temporary/LastTest.log) holds their whole output, where the reason is: the report
keeps only the first 300 KB of each test's output, and its status is what the log lacks (a skip
by exit code is logged as "Test Passed."). Each skipped test is printed with its reason:
GoogleTest's skip message, the "SKIPPED <test>: <reason>" lines of tests/support/
python_test_main.py, or else the test's last line of output (such scripts print why they skip
before they exit 77). Exits 0 whatever was skipped: ctest's own status is the verdict.
"""

import os
import re
import sys
import xml.etree.ElementTree as ElementTree
from collections import Counter

LONGEST = 240  # Characters of a reason shown; the rest is in the log.


def not_run(junit_path):
    """[(test name, ctest's message, output)] of the tests the report says did not run."""
    tests = []
    for case in ElementTree.parse(junit_path).getroot().iter("testcase"):
        if case.get("status") not in ("notrun", "disabled"):
            continue
        skipped = case.find("skipped")
        message = skipped.get("message", "") if skipped is not None else case.get("status")
        tests.append((case.get("name"), message, case.findtext("system-out") or ""))
    return tests


def logged_outputs(log_path):
    """{test name: whole output} from ctest's LastTest.log."""
    if not log_path or not os.path.exists(log_path):
        return {}
    with open(log_path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    block = re.compile(r"^\d+/\d+ Test: (.+?)\n.*?^Output:\n-+\n(.*?)<end of output>",
                       re.MULTILINE | re.DOTALL)
    return {m.group(1): m.group(2) for m in block.finditer(text)}


def reason(output, message):
    """Why a test did not run, from its output; ctest's message when the output does not say."""
    lines = output.splitlines()
    # GoogleTest: "file.cc:12: Skipped", the message's lines, then a blank line.
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            said = []
            for following in lines[i + 1:]:
                if not following.strip() or following.startswith("[  SKIPPED ]"):
                    break
                said.append(following.strip())
            return " ".join(said) or "GTEST_SKIP() without a message"
    python = [line[len("SKIPPED "):] for line in lines if line.startswith("SKIPPED ")]
    if python:
        return "; ".join(python)
    printed = [line.strip() for line in lines if line.strip()]
    if printed:
        return printed[-1]
    return message or "no reason given"


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    if not os.path.exists(argv[1]):
        print(f"test-skips: no ctest report at {argv[1]}", file=sys.stderr)
        return 1
    tests = not_run(argv[1])
    if not tests:
        print("No test was skipped.")
        return 0
    outputs = logged_outputs(argv[2] if len(argv) == 3 else None)
    print(f"\nSkipped or not run ({len(tests)}), and why:")
    # Two binaries may hold a case of the same name (a source built twice, with other flags).
    lines = Counter()
    for name, message, output in tests:
        why = reason(outputs.get(name) or output, message)
        if len(why) > LONGEST:
            why = why[:LONGEST - 3] + "..."
        lines[f"  {name}: {why}"] += 1
    for line, count in sorted(lines.items()):
        print(line + (f" ({count} tests of this name)" if count > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
