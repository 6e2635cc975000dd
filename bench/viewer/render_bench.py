#!/usr/bin/env python3
"""How long the web viewer takes to draw a long search job, in a real browser.

Starts an arbor-worker on a random-weight `small` checkpoint (8,192-token context) and an
arbor-coordinator with HTTP, runs one job of --tokens committed tokens whose branch threshold is
set, from a first pass without branches over the same prompt, so that about --branches branch
points open,
then loads the job's view in headless Chromium --rounds times and reports the viewer's own
timings (window.arborViewer: fetching the job and tree, drawing them) and the browser's, plus
the cost of the interactions a user makes: expanding a run, opening a branch point, redrawing on
a live update. Usage (after `make build`):

    .venv/bin/python bench/viewer/render_bench.py [--build build] [--tokens 4000]
        [--branches 100] [--rounds 5] [--screenshots DIR]
"""

import argparse
import os
import platform
import statistics
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "support"))

NEVER = {"lelvEntropy": 0, "lelvVarentropy": 0, "helvEntropy": 64, "lehvEntropy": 64,
         "lehvVarentropy": 4096, "hehvEntropy": 64, "hehvVarentropy": 4096}
PROMPT = "Once upon a time"


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def complete(http_json, base, policy, tokens, tag):
    status, body = http_json(base + "/v1/completions", {
        "prompt": PROMPT, "max_tokens": tokens, "seed": 11, "logprobs": 5,
        "arbor": {"policy": policy, "client_tag": tag, "ignore_eos": True}}, timeout=1800)
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {body}")
    return body["arbor"]["job_id"]


def sampled_varentropies(http_json, base, tokens):
    """The varentropy of every step of a pass that never branches, ascending."""
    job = complete(http_json, base, branch_policy(4096), tokens, "calibration")
    _, tree = http_json(f"{base}/v1/jobs/{job}/tree")
    return sorted(n["metrics"]["varentropy"] or 0 for n in tree["nodes"]
                  if n["status"] == "COMMITTED")


def branch_policy(threshold):
    """A branch where V exceeds `threshold` (the LEHV row), an adaptive sample elsewhere (greedy
    decoding of random weights falls into a loop, whose repeating V makes the count jump).
    Random weights are never calm, so rollouts run to max_len: 8 keeps the committed ones from
    crowding branch points out of the job."""
    return {"mode": "POLICY_MODE_SEARCH",
            "thresholds": {**NEVER, "lehvEntropy": 64, "lehvVarentropy": threshold},
            "branch": {"width": 4, "maxLen": 8}}


def branch_points(tree):
    by_id = {n["id"]: n for n in tree["nodes"]}
    return sum(1 for n in tree["nodes"]
               if sum(by_id[c]["status"] != "BACKSPACED" for c in n["children"]) > 1)


def run_job(http_json, base, tokens, branches):
    """A job of `tokens` committed tokens with about `branches` branch points (within 10 %).
    Committed rollouts change which steps come next, so the count is not a quantile of a pass
    without branches: the threshold is bisected, starting there (at most eight jobs). Returns
    (job id, tree, threshold, seconds the chosen job took)."""
    v = sampled_varentropies(http_json, base, tokens)
    low, high = v[0], v[-1]  # Thresholds giving too many and too few branch points.
    threshold = v[max(0, len(v) - branches)]
    best = None
    for _ in range(8):
        started = time.monotonic()
        job = complete(http_json, base, branch_policy(threshold), tokens, "render-bench")
        seconds = time.monotonic() - started
        _, tree = http_json(f"{base}/v1/jobs/{job}/tree")
        reached = branch_points(tree)
        if best is None or abs(reached - branches) < abs(best[4] - branches):
            best = (job, tree, threshold, seconds, reached)
        if abs(reached - branches) <= branches // 10:
            break
        if reached > branches:
            low = threshold
        else:
            high = threshold
        threshold = (low + high) / 2
    return best[:4]


def tree_transfer(base, job):
    """(bytes, median ms) of GET tree as sent plain and gzip-compressed, 5 requests each."""
    out = {}
    for coding in ("identity", "gzip"):
        times, size = [], 0
        for _ in range(5):
            request = urllib.request.Request(f"{base}/v1/jobs/{job}/tree",
                                             headers={"Accept-Encoding": coding})
            started = time.monotonic()
            with urllib.request.urlopen(request, timeout=60) as r:
                size = len(r.read())
            times.append(1000 * (time.monotonic() - started))
        out[coding] = (size, statistics.median(times))
    return out


def chrome():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1500,1200"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def load(browser, base, job):
    """One fresh load of the job's view; the viewer's and the browser's timings in ms."""
    browser.get("about:blank")
    browser.get(f"{base}/ui/#/jobs/{job}")
    deadline = time.monotonic() + 120
    while not browser.execute_script(
            "return window.arborViewer && window.arborViewer.renders > 0"):
        if time.monotonic() > deadline:
            raise TimeoutError("the view was never drawn")
        time.sleep(0.01)
    # Layout and paint of what was drawn: the next two animation frames.
    painted = browser.execute_async_script(
        "const done = arguments[0]; const t = performance.now();"
        "requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t)));")
    stats = browser.execute_script("return window.arborViewer")
    return {"fetch": stats["lastFetchMs"], "draw": stats["lastRenderMs"], "paint": painted,
            **{f"draw:{part}": ms for part, ms in stats["drawParts"].items()}}


def timed(browser, script):
    """Runs `script` (a function body) and waits two frames; ms from start to painted."""
    return browser.execute_async_script(
        "const done = arguments[arguments.length - 1]; const t = performance.now();"
        f"(() => {{ {script} }})();"
        "requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t)));")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument("--branches", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--screenshots", help="save job.png and branch.png here")
    args = parser.parse_args()
    os.environ["ARBOR_BINARY_DIR"] = args.build
    from arbor_processes import Processes, http_json, start_http_cluster

    processes = Processes(prefix="arbor-viewer-bench-")
    browser = None
    try:
        base = start_http_cluster(processes, "small",
                                  worker_flags=("--threads=2", "--kv_tokens=65536"))
        job, tree, threshold, generation_s = run_job(http_json, base, args.tokens, args.branches)
        nodes = tree["nodes"]
        points = branch_points(tree)
        transfer = tree_transfer(base, job)
        browser = chrome()
        rounds = [load(browser, base, job) for _ in range(args.rounds)]
        expand = timed(browser, "document.querySelector('#tree-view .run.collapsed').click();")
        branch = timed(browser, "document.querySelector('#tree-view .branch-marker').click();")
        redraw = timed(browser, "window.arborViewer.redraw();")
        rows = browser.execute_script("return document.querySelectorAll('#tree-view .run-row').length")
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            browser.save_screenshot(os.path.join(args.screenshots, "bench-job.png"))
        print(f"CPU: {cpu_name()}, load average {os.getloadavg()[0]:.2f}")
        print(f"job {job}: {len([n for n in nodes if n['status'] == 'COMMITTED'])} committed tokens, "
              f"{len(nodes)} nodes, {points} branch points (varentropy threshold {threshold:.3f}), "
              f"generated in {generation_s:.1f} s; the tree draws as {rows} rows")
        for coding, (size, ms) in transfer.items():
            print(f"  tree over HTTP, {coding}: {size / 1e6:.2f} MB in {ms:.1f} ms (median of 5)")
        for key in rounds[0]:
            values = [r[key] for r in rounds]
            print(f"  {key:6s} median {statistics.median(values):7.1f} ms  "
                  f"(min {min(values):.1f}, max {max(values):.1f}, {len(values)} loads)")
        total = [r["fetch"] + r["draw"] + r["paint"] for r in rounds]
        print(f"  load to painted median {statistics.median(total):7.1f} ms")
        print(f"  expand a run {expand:.1f} ms; open a branch point {branch:.1f} ms; "
              f"live redraw {redraw:.1f} ms")
    finally:
        if browser is not None:
            browser.quit()
        processes.stop()


if __name__ == "__main__":
    main()
