#!/usr/bin/env python3
"""Structured output on a real model: N random JSON Schemas through the OpenAI API.

Starts a coordinator and one worker on the model (default SmolLM2-135M-Instruct, loopback, free
ports), sends each schema (the generator of tests/grammar/json_schema_oracle.py, fresh per seed)
as `response_format` with a chat prompt asking for it, `--concurrency` at a time, and judges each
answer with Python's `jsonschema`. Prints how many finished with the end token and, of those,
how many parse and validate (the goal: all), how many max_tokens cut (reported apart), tokens
and wall time.

  .venv/bin/python bench/grammar/structured_output_eval.py --build build --schemas 500
"""

import argparse
import concurrent.futures
import json
import os
import random
import sys
import time

import jsonschema
import openai

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "grammar"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--schemas", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max_tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--policy", default="", help="arbor.policy_name (default: the server's)")
    args = parser.parse_args()
    os.environ["ARBOR_BINARY_DIR"] = os.path.abspath(args.build)
    from arbor_processes import Processes, wait_ready  # noqa: E402  (BIN read at import)
    from json_schema_oracle import Generator  # noqa: E402

    processes = Processes(prefix="arbor-structured-eval-")
    try:
        [worker] = processes.start("arbor-worker", f"--model={args.model}",
                                   "--listen=127.0.0.1:0")
        _, port = processes.start("arbor-coordinator", f"--model={args.model}",
                                  "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                                  f"--workers=127.0.0.1:{worker}",
                                  port_flags=("--port_file", "--http_port_file"))
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, timeout=300)
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0,
                               timeout=600)
        rng = random.Random(args.seed)
        schemas = [Generator(rng).root() for _ in range(args.schemas)]

        def ask(i):
            schema = schemas[i]
            extra = {"arbor": {"policy_name": args.policy}} if args.policy else None
            r = client.chat.completions.create(
                model=args.model, max_tokens=args.max_tokens, seed=args.seed + i,
                messages=[{"role": "user", "content": "Reply with a JSON value that follows "
                           "this JSON Schema:\n" + json.dumps(schema)}],
                response_format={"type": "json_schema",
                                 "json_schema": {"name": "answer", "schema": schema}},
                extra_body=extra)
            return schema, r.choices[0].finish_reason, r.choices[0].message.content, r.usage

        start = time.monotonic()
        finished = valid = cut = tokens = 0
        failures = []
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            for schema, reason, text, usage in pool.map(ask, range(len(schemas))):
                tokens += usage.completion_tokens
                if reason == "length":
                    cut += 1
                    continue
                finished += 1
                try:
                    error = jsonschema.exceptions.best_match(
                        jsonschema.Draft202012Validator(schema).iter_errors(json.loads(text)))
                except ValueError as e:
                    error = f"does not parse: {e}"
                if error is None:
                    valid += 1
                else:
                    failures.append((json.dumps(schema), text, str(error)))
        seconds = time.monotonic() - start
        print(f"| model | schemas | finished | valid of finished | cut by max_tokens "
              f"({args.max_tokens}) | tokens | wall |")
        print("|---|---|---|---|---|---|---|")
        print(f"| {args.model} | {len(schemas)} | {finished} | {valid} "
              f"({100 * valid / max(1, finished):.1f} %) | {cut} | {tokens} | {seconds:.0f} s |")
        for schema, text, error in failures[:5]:
            print(f"\nINVALID: {error}\nschema: {schema}\noutput: {text}")
        return 0 if valid == finished else 1
    finally:
        processes.stop()


if __name__ == "__main__":
    sys.exit(main())
