#!/usr/bin/env python3
"""Structured output's coverage of the official JSON-Schema-Test-Suite (draft 2020-12).

Takes every schema of the suite's draft2020-12 files (the copy shipped in the sdist of the
installed `jsonschema`, downloaded with pip into the build tree once), notes whether it admits
an instance (a test of it with valid: true), and has bench/grammar/schema_walk.cc compile it with
Arbor and draw documents from what compiled: random byte walks through the matcher and random
token walks through the decoder's masks. Python's `jsonschema` (Draft202012Validator, with its
format checker) judges every document. Prints the share of satisfiable schemas that compile, the
documents drawn and how many are invalid (the goal: none), and how the refused schemas were
refused (INVALID_ARGUMENT, by keyword). Exits 1 when a document is invalid or a refusal is not
INVALID_ARGUMENT.

  .venv/bin/python bench/grammar/schema_coverage.py --build build --walks 40
"""

import argparse
import collections
import glob
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tarfile

import jsonschema

SUITE = "json/tests/draft2020-12/"


def suite_files(build, optional):
    """The suite's test files, extracted once into the build tree."""
    version = importlib.metadata.version("jsonschema")
    root = os.path.join(build, "schema-coverage", f"jsonschema-{version}")
    if not os.path.isdir(root):
        download = os.path.join(build, "schema-coverage")
        os.makedirs(download, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--no-binary", "jsonschema", f"jsonschema=={version}", "-d", download],
                       check=True)
        with tarfile.open(os.path.join(download, f"jsonschema-{version}.tar.gz")) as archive:
            # Plain files under the suite's folder only: nothing else of the archive is read.
            members = [m for m in archive.getmembers() if SUITE in m.name and m.isfile()
                       and ".." not in m.name.split("/")]
            archive.extractall(download, members=members)
    base = os.path.join(root, SUITE)
    files = sorted(glob.glob(os.path.join(base, "*.json")))
    if optional:
        files += sorted(glob.glob(os.path.join(base, "optional", "**", "*.json"), recursive=True))
    return base, files


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--walks", type=int, default=40, help="byte walks per schema (a "
                        "quarter as many token walks)")
    parser.add_argument("--optional", action="store_true",
                        help="the suite's optional/ files too (formats, big numbers, …)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=0, help="list this many refusals")
    args = parser.parse_args()
    base, files = suite_files(os.path.abspath(args.build), args.optional)
    walker = subprocess.Popen([os.path.join(args.build, "bin", "arbor-schema-walk")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    totals = collections.Counter()
    refusals = collections.Counter()
    invalid, odd = [], []
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for path in files:
        for i, group in enumerate(json.load(open(path))):
            schema = group["schema"]
            satisfiable = any(t["valid"] for t in group["tests"])
            totals["schemas"] += 1
            totals["satisfiable"] += satisfiable
            request = {"schema": json.dumps(schema), "walks": args.walks, "seed": args.seed + i}
            walker.stdin.write(json.dumps(request) + "\n")
            walker.stdin.flush()
            answer = json.loads(walker.stdout.readline())
            where = f"{os.path.relpath(path, base)}: {group['description']}"
            if not answer["compiled"]:
                if answer["code"] != "INVALID_ARGUMENT":
                    odd.append((where, answer["code"], answer["error"]))
                keyword = re.search(r"keyword '([^']+)'", answer["error"])
                refusals[keyword.group(1) if keyword else "(other) " + answer["error"][
                    answer["error"].find(": ") + 2:][:60]] += satisfiable
                totals["refused unsatisfiable" if not satisfiable else "refused"] += 1
                continue
            totals["compiled"] += satisfiable
            totals["compiled unsatisfiable"] += not satisfiable
            totals["unfinished"] += answer["unfinished"]
            validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
            for document in answer["documents"]:
                totals["documents"] += 1
                try:
                    ok = validator.is_valid(json.loads(document))
                except Exception as e:  # A document that does not parse, or a validator error.
                    ok = False
                    document += f"  ({e})"
                if not ok:
                    invalid.append((where, document))
    walker.stdin.close()
    walker.wait()
    share = 100.0 * totals["compiled"] / max(totals["satisfiable"], 1)
    print(f"schemas {totals['schemas']}, satisfiable {totals['satisfiable']}, compiled "
          f"{totals['compiled']} ({share:.1f} %); unsatisfiable ones compiled "
          f"{totals['compiled unsatisfiable']}")
    print(f"documents {totals['documents']}, invalid {len(invalid)}, unfinished walks "
          f"{totals['unfinished']}")
    print(f"refusals of satisfiable schemas: {totals['refused']}, all INVALID_ARGUMENT: "
          f"{not odd}; by keyword:")
    for keyword, count in refusals.most_common(args.show or 15):
        if count:
            print(f"  {count:4d}  {keyword}")
    for where, document in invalid[:20]:
        print(f"INVALID {where}: {document[:200]}")
    for where, code, error in odd[:20]:
        print(f"NOT INVALID_ARGUMENT {where}: {code} {error}")
    return 1 if invalid or odd else 0


if __name__ == "__main__":
    sys.exit(main())
