#!/usr/bin/env python3
"""Serving latency under load: streaming chat against OpenAI-compatible servers.

Closed-loop load, as a chat front end produces it: at each level, N streams each send
`--requests` streaming chat completions one after another (greedy, `--max_tokens`), and the
client records when every content chunk arrives. Reported per server and level:

  TTFT      request sent -> first content chunk (p50 / p95 / p99, ms)
  ITL       gap between consecutive content chunks of a request (p50 / p95, ms)
  TPOT      per request, (last chunk - first chunk) / (completion tokens - 1) (mean, ms)
  tok/s     completion tokens of the level / the level's wall time
  req/s     requests of the level / the level's wall time

Servers are measured in interleaved rounds (round r runs every server at every level before
round r + 1 starts), so drift in the machine's load hits all of them alike; percentiles pool
the rounds. Works against `arbor up` and llama.cpp's llama-server alike (both speak
/v1/chat/completions with stream_options.include_usage).

  load_bench.py --server arbor=http://127.0.0.1:8080 \\
                --server llama-server=http://127.0.0.1:8081 \\
                --streams 1,4,16,32 --requests 4 --rounds 3 --json results.json
"""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse

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
    def __init__(self, label, url, model):
        self.label = label
        parsed = urllib.parse.urlparse(url)
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.model = model

    def chat(self, question, max_tokens):
        """One streaming request: (send time, [chunk arrival times], completion tokens)."""
        body = json.dumps({
            "model": self.model,
            "messages": [{"role": "user", "content": question}],
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        })
        connection = http.client.HTTPConnection(self.host, self.port, timeout=600)
        sent = time.perf_counter()
        connection.request("POST", "/v1/chat/completions", body,
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            raise RuntimeError(f"{self.label}: HTTP {response.status}: {response.read()[:200]!r}")
        arrivals, tokens = [], None
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
                if (choice.get("delta") or {}).get("content"):
                    arrivals.append(now)
            if event.get("usage"):
                tokens = event["usage"].get("completion_tokens")
        connection.close()
        return sent, arrivals, tokens if tokens is not None else len(arrivals)


def run_level(server, streams, requests, max_tokens, offset):
    records, errors = [], []
    lock = threading.Lock()

    def stream(index):
        for r in range(requests):
            question = QUESTIONS[(offset + index * requests + r) % len(QUESTIONS)]
            try:
                record = server.chat(question, max_tokens)
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
    ttft = [(arrivals[0] - sent) * 1e3 for sent, arrivals, _ in records if arrivals]
    itl = [(b - a) * 1e3 for _, arrivals, _ in records for a, b in zip(arrivals, arrivals[1:])]
    tpot = [(arrivals[-1] - arrivals[0]) * 1e3 / (tokens - 1)
            for _, arrivals, tokens in records if len(arrivals) > 1 and tokens > 1]
    tokens = sum(t for _, _, t in records)
    return {
        "requests": len(records), "errors": len(errors), "wall_s": wall,
        "ttft_ms": {"p50": percentile(ttft, 50), "p95": percentile(ttft, 95),
                    "p99": percentile(ttft, 99)},
        "itl_ms": {"p50": percentile(itl, 50), "p95": percentile(itl, 95)},
        "tpot_ms": statistics.fmean(tpot) if tpot else float("nan"),
        "tokens_per_s": tokens / wall if wall > 0 else 0.0,
        "requests_per_s": len(records) / wall if wall > 0 else 0.0,
        "tokens_per_request": tokens / len(records) if records else 0.0,
    }


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
    parser.add_argument("--json", help="write the summary here too")
    args = parser.parse_args()

    servers = []
    for spec in args.server:
        label, _, url = spec.partition("=")
        if not url:
            parser.error(f"--server {spec}: expected LABEL=URL")
        servers.append(Server(label, url, args.model))
    levels = [int(n) for n in args.streams.split(",")]

    for server in servers:  # Warm-up: load, caches, first-call costs.
        server.chat(QUESTIONS[0], args.max_tokens)
    pooled = {(s.label, n): ([], 0.0, []) for s in servers for n in levels}
    for round_index in range(args.rounds):
        for n in levels:
            for server in servers:
                records, wall, errors = run_level(server, n, args.requests, args.max_tokens,
                                                  offset=round_index * 7 + n)
                old = pooled[(server.label, n)]
                pooled[(server.label, n)] = (old[0] + records, old[1] + wall, old[2] + errors)
                print(f"round {round_index + 1}: {server.label} x{n}: {len(records)} requests "
                      f"in {wall:.1f} s", file=sys.stderr)

    summary = []
    print("| server | streams | requests | TTFT p50 / p95 / p99 ms | ITL p50 / p95 ms | "
          "TPOT ms | tok/s | req/s | tokens/request |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in levels:
        for server in servers:
            row = summarise(*pooled[(server.label, n)])
            row.update(server=server.label, streams=n)
            summary.append(row)
            t, i = row["ttft_ms"], row["itl_ms"]
            print(f"| {server.label} | {n} | {row['requests']}"
                  f"{' (' + str(row['errors']) + ' failed)' if row['errors'] else ''} | "
                  f"{t['p50']:.0f} / {t['p95']:.0f} / {t['p99']:.0f} | "
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
