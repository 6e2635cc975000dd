#!/usr/bin/env python3
"""Serving latency under load: streaming chat against OpenAI-compatible servers.

Closed-loop load, as a chat front end produces it: at each level, N streams each send
`--requests` streaming chat completions one after another (greedy, `--max_tokens`), and the
client records when every content chunk arrives. Reported per server and level:

  TTFT      request sent -> first content chunk (p50 / p95 / p99, ms)
  TTFD      request sent -> first delta of any kind, content or reasoning_content (p50 / p99,
            ms): when a search streams its traces before its answer, what the user first sees
  ITL       gap between consecutive content chunks of a request (p50 / p95, ms)
  TPOT      per request, (last chunk - first chunk) / (completion tokens - 1) (mean, ms)
  tok/s     completion tokens of the level / the level's wall time
  req/s     requests of the level / the level's wall time

Servers are measured in interleaved rounds (round r runs every server at every level before
round r + 1 starts), so drift in the machine's load hits all of them alike; percentiles pool
the rounds. Works against `arbor up` and llama.cpp's llama-server alike (both speak
/v1/chat/completions with stream_options.include_usage). Requests ask for temperature 0; an
arbor server runs its default policy under it unless `--policy LABEL=NAME` names a preset
(greedy for a like-for-like race with llama-server; `arbor up`'s default, CoT-decoding, keeps
its traces greedy at temperature 0) or `--policy 'LABEL={...}'` gives PolicyConfig fields in
JSON. The same URL may be given under two labels with two policies, e.g. to compare a search's
first delta with greedy's first token:

  load_bench.py --server greedy=http://127.0.0.1:8000 --server cot=http://127.0.0.1:8000 \
                --policy greedy=greedy --streams 1,16

  load_bench.py --server arbor=http://127.0.0.1:8080 \\
                --server llama-server=http://127.0.0.1:8081 \\
                --streams 1,4,16,32 --requests 4 --rounds 3 --json results.json

With --mixed (arbor only), fair sharing instead: `--interactive` greedy streams measured alone,
then again while heavy and hostile jobs run beside them on the same workers — the widest TRACE
the limits allow, a SEARCH of width 32 nested 2 deep, a greedy answer constrained by a schema of
20,000 optional properties, and streamed requests dropped after their first chunk — reporting
the interactive TTFT and ITL (p50 / p99) unloaded and loaded, and whether loaded p99 stays
within 2x unloaded p99 plus one loaded step (the worker's mean step from its /metrics when
--worker_metrics names it, else the loaded ITL p50: an interactive stream has a row in every
step).

  load_bench.py --server arbor=http://127.0.0.1:8000 --mixed --interactive 2 --requests 6 \\
                --worker_metrics http://127.0.0.1:9100/metrics
"""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request

# Short questions with short answers, all different so that no two requests share more than
# the chat template's prefix.
SUBJECTS = ["the sky", "grass", "snow", "coal", "a banana", "the sun", "blood", "an orange",
            "the sea", "milk", "a lemon", "chocolate", "a cherry", "ash", "a plum", "cream"]
QUESTIONS = ([f"What color is {s}?" for s in SUBJECTS] +
             [f"What is {a} plus {b}?" for a in range(2, 9) for b in range(3, 7)] +
             [f"Name an animal that starts with the letter {c}." for c in "BCDFGHKLMPRST"] +
             [f"Give one word that rhymes with {w}." for w in
              ["cat", "tree", "light", "cake", "rain", "ball", "moon", "star", "fish", "hand"]])


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


class Server:
    def __init__(self, label, url, model, policy=None):
        self.label = label
        # The plain levels' arbor policy: a preset's name, a PolicyConfig in JSON, or None.
        self.policy = policy
        parsed = urllib.parse.urlparse(url)
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.model = model

    def arbor(self):
        """The arbor extension of this server's plain requests: its --policy, if any."""
        if not self.policy:
            return None
        if self.policy.startswith("{"):
            return {"policy": json.loads(self.policy)}
        return {"policy_name": self.policy}

    def chat(self, question, max_tokens, arbor=None, response_format=None):
        """One streaming request: (send time, [content chunk arrival times], completion
        tokens, arrival of the first delta of any kind or None). `arbor`: the request's arbor
        extension (a policy), for arbor servers only; `response_format` as OpenAI's."""
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": question}],
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if response_format:
            body["response_format"] = response_format
        if arbor:
            body["arbor"] = arbor
            if "policy" in arbor:  # It brings its own sampling; temperature 0 beside it is refused.
                del body["temperature"]
        body = json.dumps(body, separators=(",", ":"))
        connection = http.client.HTTPConnection(self.host, self.port, timeout=600)
        sent = time.perf_counter()
        connection.request("POST", "/v1/chat/completions", body,
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            raise RuntimeError(f"{self.label}: HTTP {response.status}: {response.read()[:200]!r}")
        arrivals, tokens, first_delta = [], None, None
        for raw in response:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            event = json.loads(data)
            now = time.perf_counter()
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    arrivals.append(now)
                if first_delta is None and (delta.get("content") or delta.get("reasoning_content")):
                    first_delta = now
            if event.get("usage"):
                tokens = event["usage"].get("completion_tokens")
        connection.close()
        return sent, arrivals, tokens if tokens is not None else len(arrivals), first_delta


def run_level(server, streams, requests, max_tokens, offset, arbor=None):
    records, errors = [], []
    lock = threading.Lock()

    def stream(index):
        for r in range(requests):
            question = QUESTIONS[(offset + index * requests + r) % len(QUESTIONS)]
            try:
                record = server.chat(question, max_tokens, arbor)
            except Exception as error:  # Reported with the level; the other streams go on.
                with lock:
                    errors.append(str(error))
                continue
            with lock:
                records.append(record)

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(streams)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return records, time.perf_counter() - start, errors


def summarise(records, wall, errors):
    ttft = [(arrivals[0] - sent) * 1e3 for sent, arrivals, _, _ in records if arrivals]
    ttfd = [(first - sent) * 1e3 for sent, _, _, first in records if first is not None]
    itl = [(b - a) * 1e3 for _, arrivals, _, _ in records for a, b in zip(arrivals, arrivals[1:])]
    tpot = [(arrivals[-1] - arrivals[0]) * 1e3 / (tokens - 1)
            for _, arrivals, tokens, _ in records if len(arrivals) > 1 and tokens > 1]
    tokens = sum(t for _, _, t, _ in records)
    return {
        "requests": len(records), "errors": len(errors), "wall_s": wall,
        "ttft_ms": {"p50": percentile(ttft, 50), "p95": percentile(ttft, 95),
                    "p99": percentile(ttft, 99)},
        "ttfd_ms": {"p50": percentile(ttfd, 50), "p99": percentile(ttfd, 99)},
        "itl_ms": {"p50": percentile(itl, 50), "p95": percentile(itl, 95),
                   "p99": percentile(itl, 99)},
        "tpot_ms": statistics.fmean(tpot) if tpot else float("nan"),
        "tokens_per_s": tokens / wall if wall > 0 else 0.0,
        "requests_per_s": len(records) / wall if wall > 0 else 0.0,
        "tokens_per_request": tokens / len(records) if records else 0.0,
    }


# The heavy and hostile jobs of --mixed, as arbor request extensions: the widest TRACE the
# policy limits allow (entropix/policy_config.cc) and a SEARCH of width 32 nested 2 deep.
GREEDY = {"policy_name": "greedy"}
# The TRACE forks wherever it can (fork_entropy 0); the SEARCH sees every state as LEHV, never
# calm, and keeps every candidate, so it branches as often as the job's budgets let it.
WIDEST_TRACE = {"policy": {"mode": "POLICY_MODE_TRACE",
                           "trace": {"width": 64, "maxDepth": 8, "maxTraces": 256,
                                     "forkEntropy": 0}}}
WIDE_SEARCH = {"policy": {
    "mode": "POLICY_MODE_SEARCH",
    "branch": {"width": 32, "maxDepth": 2, "maxLen": 16, "candidateMinP": 0,
               "calmEntropy": 0, "calmVarentropy": 0},
    "thresholds": {"lelvEntropy": 0, "helvEntropy": 64, "lehvEntropy": 64,
                   "lehvVarentropy": 0, "hehvEntropy": 0, "hehvVarentropy": 0}}}


# An object of 20,000 optional properties of any value (229 KB as sent, within the 256 KiB
# schema limit), as arbor-bench-constraint's: each of its tokens' masks meets every property name.
WIDE_SCHEMA = {"type": "json_schema", "json_schema": {"name": "wide", "schema": {
    "type": "object", "properties": {f"f{i}": {} for i in range(20000)}}}}


HEAVY_KINDS = ("trace", "search", "schema", "dropped")


def hostile_loop(server, kind, max_tokens, stop, counts, lock):
    """Sends `kind` jobs one after another until `stop`: "trace", "search", "schema" (whole
    streams) or "dropped" (the connection closed after the first chunk); counts them by
    outcome."""
    index = 0
    while not stop.is_set():
        question = QUESTIONS[(index * 5 + len(kind)) % len(QUESTIONS)]
        index += 1
        try:
            if kind == "dropped":
                drop_after_first_chunk(server, question, max_tokens)
            elif kind == "schema":
                server.chat(question, max_tokens, GREEDY, response_format=WIDE_SCHEMA)
            else:
                server.chat(question, max_tokens,
                            WIDEST_TRACE if kind == "trace" else WIDE_SEARCH)
            outcome = "done"
        except Exception:  # Counted: a refused or failed heavy job is part of the figures.
            outcome = "failed"
            stop.wait(0.5)  # A refused kind must not spin the client's CPU.
        with lock:
            counts[(kind, outcome)] = counts.get((kind, outcome), 0) + 1


def drop_after_first_chunk(server, question, max_tokens):
    body = json.dumps({"model": server.model, "max_tokens": max_tokens, "stream": True,
                       "messages": [{"role": "user", "content": question}],
                       "arbor": WIDE_SEARCH})
    connection = http.client.HTTPConnection(server.host, server.port, timeout=600)
    connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}")
    for raw in response:
        if raw.strip().startswith(b"data:"):
            break
    connection.close()


def step_totals(metrics_url):
    """(steps, seconds, rows) the worker at `metrics_url` has run, from its /metrics."""
    with urllib.request.urlopen(metrics_url, timeout=30) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("arbor_worker_step_seconds_count", "arbor_worker_step_seconds_sum",
                    "arbor_worker_step_rows_sum"):
            values[name] = float(value)
    return (values["arbor_worker_step_seconds_count"], values["arbor_worker_step_seconds_sum"],
            values["arbor_worker_step_rows_sum"])


def measured(server, args, phase, rows):
    """Runs the interactive streams as `phase` into `rows`, with the worker's steps meanwhile."""
    before = step_totals(args.worker_metrics) if args.worker_metrics else None
    rows[phase] = summarise(*run_level(server, args.interactive, args.requests, args.max_tokens,
                                       offset=len(rows), arbor=GREEDY))
    if before:
        steps, seconds, step_rows = (b - a for a, b in zip(before,
                                                            step_totals(args.worker_metrics)))
        rows[phase]["step_ms"] = seconds * 1e3 / max(steps, 1)
        rows[phase]["rows_per_step"] = step_rows / max(steps, 1)


def mixed(server, args):
    """Interactive streams unloaded, then beside --hostile streams of each --heavy kind."""
    rows = {}
    measured(server, args, "unloaded", rows)
    stop, lock, counts = threading.Event(), threading.Lock(), {}
    threads = [threading.Thread(target=hostile_loop,
                                args=(server, kind, args.heavy_tokens, stop, counts, lock))
               for kind in args.heavy.split(",") for _ in range(args.hostile)]
    for thread in threads:
        thread.start()
    time.sleep(args.settle)  # The heavy jobs reach the workers' steps first.
    measured(server, args, "loaded", rows)
    stop.set()
    for thread in threads:
        thread.join()
    return rows, counts


def print_mixed(rows, counts):
    print("| interactive | requests | TTFT p50 / p99 ms | ITL p50 / p99 ms | worker step ms "
          "| rows / step |")
    print("|---|---|---|---|---|---|")
    for phase, row in rows.items():
        t, i = row["ttft_ms"], row["itl_ms"]
        print(f"| {phase} | {row['requests']}"
              f"{' (' + str(row['errors']) + ' failed)' if row['errors'] else ''} | "
              f"{t['p50']:.0f} / {t['p99']:.0f} | {i['p50']:.1f} / {i['p99']:.1f} | "
              f"{row.get('step_ms', float('nan')):.1f} | "
              f"{row.get('rows_per_step', float('nan')):.1f} |")
    # One step: the worker's mean step under load, else the loaded ITL p50 (an interactive
    # stream has a row in every step).
    step = rows["loaded"].get("step_ms", rows["loaded"]["itl_ms"]["p50"])
    for metric in ("ttft_ms", "itl_ms"):
        unloaded, loaded = rows["unloaded"][metric]["p99"], rows["loaded"][metric]["p99"]
        bound = 2 * unloaded + step
        print(f"{metric[:-3].upper()} p99: loaded {loaded:.0f} ms vs 2 x unloaded + one step "
              f"= {bound:.0f} ms: {'met' if loaded <= bound else 'missed'} "
              f"(loaded / unloaded = {loaded / unloaded:.2f})")
    print("heavy jobs during the loaded phase: " + ", ".join(
        f"{kind} {outcome} {n}" for (kind, outcome), n in sorted(counts.items())))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", action="append", required=True, metavar="LABEL=URL",
                        help="a server to measure (repeat for several)")
    parser.add_argument("--streams", default="1,4,16,32", help="concurrency levels")
    parser.add_argument("--requests", type=int, default=4, help="requests per stream per level")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--max_tokens", type=int, default=64)
    parser.add_argument("--model", default="", help="the request's model field")
    parser.add_argument("--policy", action="append", default=[], metavar="LABEL=NAME",
                        help="arbor servers: run the plain levels of server LABEL under the "
                             "preset NAME (arbor.policy_name), or under a PolicyConfig given "
                             "in JSON (arbor.policy: its fields over the server's default)")
    parser.add_argument("--json", help="write the summary here too")
    parser.add_argument("--mixed", action="store_true",
                        help="interactive streams unloaded, then beside heavy and hostile jobs")
    parser.add_argument("--interactive", type=int, default=2, help="--mixed: interactive streams")
    parser.add_argument("--heavy", default=",".join(HEAVY_KINDS),
                        help="--mixed: the heavy kinds run beside the interactive streams, "
                             "comma-separated (one alone: the interactive latency beside a "
                             "single other request)")
    parser.add_argument("--hostile", type=int, default=1,
                        help=f"--mixed: streams of each heavy kind ({', '.join(HEAVY_KINDS)})")
    parser.add_argument("--heavy_tokens", type=int, default=64,
                        help="--mixed: max_tokens of the heavy jobs")
    parser.add_argument("--settle", type=float, default=3.0,
                        help="--mixed: seconds the heavy jobs run before the measurement")
    parser.add_argument("--worker_metrics", default="",
                        help="--mixed: a worker's /metrics URL, for its step time and rows")
    args = parser.parse_args()

    policies = {}
    for spec in args.policy:
        label, _, name = spec.partition("=")
        if not name:
            parser.error(f"--policy {spec}: expected LABEL=NAME")
        policies[label] = name
    servers = []
    for spec in args.server:
        label, _, url = spec.partition("=")
        if not url:
            parser.error(f"--server {spec}: expected LABEL=URL")
        servers.append(Server(label, url, args.model, policies.pop(label, None)))
    if policies:
        parser.error(f"--policy names no --server: {', '.join(policies)}")
    levels = [int(n) for n in args.streams.split(",")]
    if not set(args.heavy.split(",")) <= set(HEAVY_KINDS):
        parser.error(f"--heavy {args.heavy}: expected kinds among {', '.join(HEAVY_KINDS)}")
    if args.mixed:
        servers[0].chat(QUESTIONS[0], args.max_tokens, GREEDY)  # Warm-up.
        rows, counts = mixed(servers[0], args)
        print_mixed(rows, counts)
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"mixed": rows, "heavy": {f"{k} {o}": n for (k, o), n in counts.items()},
                           "max_tokens": args.max_tokens, "heavy_tokens": args.heavy_tokens,
                           "interactive": args.interactive, "hostile": args.hostile,
                           "heavy": args.heavy}, out, indent=1)
        return 1 if any(row["errors"] for row in rows.values()) else 0

    for server in servers:  # Warm-up: load, caches, first-call costs.
        server.chat(QUESTIONS[0], args.max_tokens, server.arbor())
    pooled = {(s.label, n): ([], 0.0, []) for s in servers for n in levels}
    for round_index in range(args.rounds):
        for n in levels:
            for server in servers:
                records, wall, errors = run_level(server, n, args.requests, args.max_tokens,
                                                  offset=round_index * 7 + n,
                                                  arbor=server.arbor())
                old = pooled[(server.label, n)]
                pooled[(server.label, n)] = (old[0] + records, old[1] + wall, old[2] + errors)
                print(f"round {round_index + 1}: {server.label} x{n}: {len(records)} requests "
                      f"in {wall:.1f} s", file=sys.stderr)

    summary = []
    print("| server | streams | requests | TTFT p50 / p95 / p99 ms | TTFD p50 / p99 ms | "
          "ITL p50 / p95 ms | TPOT ms | tok/s | req/s | tokens/request |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in levels:
        for server in servers:
            row = summarise(*pooled[(server.label, n)])
            row.update(server=server.label, streams=n)
            summary.append(row)
            t, d, i = row["ttft_ms"], row["ttfd_ms"], row["itl_ms"]
            print(f"| {server.label} | {n} | {row['requests']}"
                  f"{' (' + str(row['errors']) + ' failed)' if row['errors'] else ''} | "
                  f"{t['p50']:.0f} / {t['p95']:.0f} / {t['p99']:.0f} | "
                  f"{d['p50']:.0f} / {d['p99']:.0f} | "
                  f"{i['p50']:.1f} / {i['p95']:.1f} | {row['tpot_ms']:.1f} | "
                  f"{row['tokens_per_s']:.0f} | {row['requests_per_s']:.2f} | "
                  f"{row['tokens_per_request']:.1f} |")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"max_tokens": args.max_tokens, "rounds": args.rounds,
                       "requests_per_stream": args.requests, "results": summary}, out, indent=1)
    return 1 if any(row["errors"] for row in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
