"""The web viewer (/ui) in a real browser against real servers.

Headless Chromium, driven by Selenium through chromedriver (Debian's chromium, chromium-driver
and python3-selenium), loads the viewer from an arbor-coordinator serving a worker on a `tiny`
checkpoint. Jobs are run with policies that force each row of the decision matrix, so every
strategy appears; the test reads the page as a user would and checks it against the job and
tree the JSON API returns.
"""

import gzip
import json
import math
import os
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, http_json, start_http_cluster  # noqa: E402  (path set)
from browser import chrome, unavailable  # noqa: E402

if unavailable():  # The dependency script installs it; without it there is nothing to test.
    print(f"{unavailable()}; skipping")
    sys.exit(77)

from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

# Thresholds that make one row of the decision matrix fire at every step (docs/ARCHITECTURE.md §4.2).
NEVER = {"lelvEntropy": 0, "lelvVarentropy": 0, "helvEntropy": 64, "lehvVarentropy": 4096,
         "hehvEntropy": 64, "hehvVarentropy": 4096}
POLICIES = {
    # Rows 1 and 5 by the sampled metrics: argmax, adaptive.
    "plain": {"mode": "POLICY_MODE_SEARCH"},
    "argmax": {"mode": "POLICY_MODE_SEARCH",
               "thresholds": {**NEVER, "lelvEntropy": 64, "lelvVarentropy": 4096}},
    # Row 3: a branch at every step of the main path, branch samples inside the rollouts.
    "branch": {"mode": "POLICY_MODE_SEARCH",
               "thresholds": {**NEVER, "lehvEntropy": 64, "lehvVarentropy": 0},
               "branch": {"width": 3, "maxLen": 4}},
    # Row 2: inserts until the budget is spent, then hot samples.
    "insert": {"mode": "POLICY_MODE_SEARCH",
               "thresholds": {**NEVER, "helvEntropy": 0, "helvVarentropy": 4096},
               "insert": {"cooldown": 2, "maxPerJob": 3}},
    # Row 4: backspaces until the budget is spent, then resamples.
    "backspace": {"mode": "POLICY_MODE_SEARCH",
                  "thresholds": {**NEVER, "hehvEntropy": 0, "hehvVarentropy": 0},
                  "backspace": {"maxPerJob": 6}},
}


class Cluster(Processes):
    """A worker and a coordinator with HTTP on loopback, on a `tiny` checkpoint."""

    def __init__(self):
        super().__init__(prefix="arbor-viewer-")
        # Short worker runs make a long job last long enough to be watched live.
        self.base = start_http_cluster(
            self, worker_flags=("--threads=1", "--kv_tokens=32768"),
            coordinator_flags=("--steps_per_run=2", "--first_run_steps=1"))

    def complete(self, policy, tag, max_tokens=24, seed=7):
        """Runs a completion to its end; returns its job id."""
        status, body = http_json(self.base + "/v1/completions", {
            "prompt": "Once upon a time", "max_tokens": max_tokens, "seed": seed, "logprobs": 5,
            "arbor": {"policy": policy, "client_tag": tag, "ignore_eos": True}})
        if status != 200:
            raise AssertionError(f"HTTP {status}: {body}")
        return body["arbor"]["job_id"]


def shown(text):
    """Text as the viewer prints tokens: newlines kept, other control characters escaped."""
    named = {"\t": "\\t", "\r": "\\r"}
    return "".join(c if c == "\n" else named.get(c, f"\\x{ord(c):02x}")
                   if ord(c) < 0x20 or ord(c) == 0x7f else c for c in text)


def same_characters(text):
    """`text` without what a token's own piece cannot show: a character whose UTF-8 bytes span
    tokens is U+FFFD in each token's piece (TREE_FORMAT.md) but whole in the job's text."""
    return "".join(c for c in text if ord(c) < 0x80)


def hex_to_rgb(color):
    return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))


def css_rgb(value):
    """'rgb(1, 2, 3)' or 'rgba(1, 2, 3, 1)' → (1, 2, 3)."""
    inner = value[value.index("(") + 1:value.index(")")]
    return tuple(int(float(v)) for v in inner.split(",")[:3])


class ViewerBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()
        try:
            cls.jobs = {name: cls.cluster.complete(policy, tag=name)
                        for name, policy in POLICIES.items()}
            cls.browser = chrome()
        except WebDriverException as e:
            cls.cluster.stop()
            raise unittest.SkipTest(f"headless Chromium does not start here: {e.msg}")
        except BaseException:
            cls.cluster.stop()
            raise
        cls.palette = {s["name"]: s["color"]
                       for s in http_json(cls.cluster.base + "/ui/palette.json")[1]["strategies"]}

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()
        cls.cluster.stop()

    def tearDown(self):
        self.assertTrue(self.cluster.alive(), "a server died")
        errors = [e for e in self.browser.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [], "the page logged errors")

    def api(self, path):
        status, body = http_json(self.cluster.base + path)
        self.assertEqual(status, 200, body)
        return body

    def open_job(self, job_id):
        """Opens the job's view and waits until it is drawn; returns the job and its tree."""
        self.browser.get(f"{self.cluster.base}/ui/#/jobs/{job_id}")
        WebDriverWait(self.browser, 30).until(lambda b: b.execute_script(
            "return window.arborViewer && window.arborViewer.jobId === arguments[0] && "
            "window.arborViewer.state !== 'running' && window.arborViewer.state !== 'queued'",
            job_id))
        return self.api(f"/v1/jobs/{job_id}"), self.api(f"/v1/jobs/{job_id}/tree?top_logprobs=1")

    def test_legend_names_every_strategy_in_its_colour(self):
        self.browser.get(self.cluster.base + "/ui/")
        WebDriverWait(self.browser, 30).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, "#legend [data-strategy]"))
        items = self.browser.find_elements(By.CSS_SELECTOR, "#legend [data-strategy]")
        shown = {}
        for item in items:
            swatch = item.find_element(By.CSS_SELECTOR, ".swatch")
            shown[item.get_attribute("data-strategy")] = css_rgb(
                swatch.value_of_css_property("background-color"))
        self.assertEqual(shown, {name: hex_to_rgb(c) for name, c in self.palette.items()})
        for status in ("COMMITTED", "INSERTED", "EXPLORED", "PRUNED", "BACKSPACED"):
            self.assertTrue(self.browser.find_elements(
                By.CSS_SELECTOR, f'#legend [data-status="{status}"]'), status)

    def test_job_list_filters_by_tag_and_state(self):
        self.browser.get(self.cluster.base + "/ui/")
        tag = self.browser.find_element(By.ID, "tag-filter")
        tag.send_keys("branch")
        # Read in one script: the list is redrawn every few seconds.
        listed = "return [...document.querySelectorAll('.job-item')].map(e => e.dataset.job)"
        WebDriverWait(self.browser, 30).until(
            lambda b: b.execute_script(listed) == [self.jobs["branch"]])
        # Each job shows its prompt's start and its age.
        prompt, detail = self.browser.execute_script(
            "const item = document.querySelector('.job-item');"
            "return [item.querySelector('.job-prompt').textContent,"
            "        item.querySelector('.job-detail').textContent];")
        self.assertEqual(prompt, "Once upon a time")
        self.assertRegex(detail, r"\d+ tokens · \d+ explored · \d+ (s|min) ago")
        tag.clear()
        self.browser.find_element(By.CSS_SELECTOR, "#state-filter option[value=failed]").click()
        WebDriverWait(self.browser, 30).until(lambda b: b.execute_script(listed) == [])

    def test_every_strategy_is_drawn_in_its_colour_and_the_text_is_the_jobs(self):
        drawn = set()
        for name, job_id in self.jobs.items():
            with self.subTest(job=name):
                job, tree = self.open_job(job_id)
                by_id = {n["id"]: n for n in tree["nodes"]}
                spans = self.browser.find_elements(By.CSS_SELECTOR, "#text-view .tok")
                kept = [s for s in spans if "st-backspaced" not in s.get_attribute("class")]
                self.assertEqual(len(kept), job["usage"]["generated_tokens"])
                self.assertEqual(same_characters(
                    "".join(s.get_attribute("textContent") for s in kept)),
                    same_characters(shown(job["text"])))
                for span in spans + self.browser.find_elements(By.CSS_SELECTOR, "#tree-view .tok"):
                    node = by_id[int(span.get_attribute("data-node"))]
                    self.assertEqual(self.rgb(span, "color"), self.palette_rgb(node["strategy"]))
                    drawn.add(node["strategy"])
                    if node["status"] == "BACKSPACED":  # The retraction, in BACKSPACE's colour.
                        self.assertEqual(self.rgb(span, "text-decoration-color"),
                                         self.palette_rgb("BACKSPACE"))
                        drawn.add("BACKSPACE")
                for marker in self.browser.find_elements(By.CSS_SELECTOR, ".branch-marker, .branch-ref"):
                    self.assertEqual(self.rgb(marker, "color"), self.palette_rgb("BRANCH"))
                    drawn.add("BRANCH")
        self.assertEqual(drawn, set(self.palette))

    def rgb(self, element, css_property):
        return css_rgb(element.value_of_css_property(css_property))

    def palette_rgb(self, strategy):
        return hex_to_rgb(self.palette[strategy])

    def test_the_stop_token_shows_as_end_not_its_text(self):
        # The argmax job's fourth token, made a stop id: the same job ends on its first
        # occurrence, and the viewer draws it as ⟨end⟩ after the answer's text.
        _, tree = self.open_job(self.jobs["argmax"])
        generated = [n["token_id"] for n in tree["nodes"] if n["status"] == "COMMITTED"]
        stop = generated[3]
        status, body = http_json(self.cluster.base + "/v1/completions", {
            "prompt": "Once upon a time", "max_tokens": 24, "seed": 7,
            "arbor": {"policy": POLICIES["argmax"], "ignore_eos": True,
                      "stop_token_ids": [stop]}})
        self.assertEqual(status, 200, body)
        job, tree = self.open_job(body["arbor"]["job_id"])
        ended = [n for n in tree["nodes"] if n.get("stop_token")]
        self.assertEqual([n["token_id"] for n in ended], [stop])
        spans = self.browser.find_elements(By.CSS_SELECTOR, "#text-view .tok")
        texts = [s.get_attribute("textContent") for s in spans]
        self.assertEqual(len(texts), generated.index(stop) + 1)
        self.assertEqual(texts[-1], "⟨end⟩")
        self.assertEqual(same_characters("".join(texts[:-1])), same_characters(shown(job["text"])))
        self.assertEqual(body["choices"][0]["text"], job["text"])

    def test_replay_says_the_search_reproduced_and_links_the_new_job(self):
        self.open_job(self.jobs["branch"])
        self.browser.find_element(By.ID, "replay-button").click()
        box = WebDriverWait(self.browser, 60).until(
            lambda b: (lambda e: e if e.is_displayed() else None)(b.find_element(By.ID, "replay-box")))
        self.assertEqual(box.get_attribute("data-identical"), "true", box.text)
        self.assertIn("Reproduced", box.text)
        link = box.find_element(By.TAG_NAME, "a")
        replay_id = link.text.removeprefix("job ")
        self.assertNotEqual(replay_id, self.jobs["branch"])
        job = self.api(f"/v1/jobs/{replay_id}")
        self.assertEqual(job["client_tag"], f"replay of {self.jobs['branch']}")
        link.click()
        _, tree = self.open_job(replay_id)
        self.assertFalse(self.browser.find_element(By.ID, "replay-box").is_displayed())

    def test_the_prompt_is_shown_as_the_model_read_it(self):
        job, _ = self.open_job(self.jobs["argmax"])
        self.assertIn("Once upon a time", job["prompt"])  # GetJob decodes the prompt.
        shown_prompt = self.browser.find_element(By.ID, "prompt-view").get_attribute("textContent")
        self.assertEqual(shown_prompt, job["prompt"])

    def test_the_prompt_box_starts_a_job_with_the_picked_policy_and_opens_it(self):
        self.browser.get(self.cluster.base + "/ui/")
        prompt = WebDriverWait(self.browser, 30).until(
            lambda b: b.find_element(By.ID, "start-prompt"))
        prompt.send_keys("Name a colour.")
        self.browser.find_element(By.CSS_SELECTOR, "#start-policy option[value=greedy]").click()
        tokens = self.browser.find_element(By.ID, "start-max-tokens")
        tokens.clear()
        tokens.send_keys("6")
        self.browser.find_element(By.ID, "start-button").click()
        WebDriverWait(self.browser, 60).until(lambda b: b.execute_script(
            "return window.arborViewer && window.arborViewer.jobId && "
            "window.arborViewer.state === 'finished'"))
        job_id = self.browser.execute_script("return window.arborViewer.jobId")
        job = self.api(f"/v1/jobs/{job_id}")
        self.assertEqual(job["client_tag"], "viewer")
        self.assertIn("Name a colour.", job["prompt"])
        self.assertEqual(job["request"]["max_tokens"], 6)
        self.assertEqual(job["policy"]["mode"], "POLICY_MODE_CANONICAL")  # The greedy preset.
        self.assertEqual(job["policy"]["thresholds"]["lelv_entropy"], 64)
        self.assertTrue(self.browser.find_element(By.ID, "start-error").get_attribute("hidden"))

    def test_threshold_labels_are_rounded_and_inside_the_chart(self):
        # Unround thresholds, two a few pixels apart whose labels must not overlap.
        job_id = self.cluster.complete({"mode": "POLICY_MODE_SEARCH", "thresholds": {
            **NEVER, "lelvEntropy": 0.123456, "hehvEntropy": 2.81734, "helvEntropy": 2.9,
            "lehvVarentropy": 10.55555}}, tag="thresholds", max_tokens=4)
        self.open_job(job_id)
        labels = self.browser.execute_script(
            "const svg = document.querySelector('.chart-svg'); const box = svg.getBoundingClientRect();"
            "return [...svg.querySelectorAll('.threshold-label')].map(t => {"
            "  const r = t.getBoundingClientRect();"
            "  return [t.textContent, r.left - box.left, r.right - box.left, r.top, r.bottom, box.width];});")
        texts = [label[0] for label in labels]
        for wanted in ("LELV 0.123", "HEHV 2.82", "HELV 2.9", "LEHV 10.6"):
            self.assertIn(wanted, texts)
        for text, left, right, top, bottom, width in labels:
            self.assertLessEqual(right, width + 0.5, f"{text} is clipped")
        ordered = sorted(labels, key=lambda label: label[3])
        for upper, lower in zip(ordered, ordered[1:]):
            if upper[1] == lower[1]:  # The same panel's column.
                self.assertLessEqual(upper[4], lower[3] + 2, f"{upper[0]} overlaps {lower[0]}")

    def test_expanding_a_run_shows_its_tokens(self):
        self.open_job(self.jobs["argmax"])
        run = self.browser.find_element(By.CSS_SELECTOR, "#tree-view .run.collapsed")
        start, count = run.get_attribute("data-run"), int(run.get_attribute("data-nodes"))
        self.assertGreater(count, 1)
        run.click()
        expanded = self.browser.find_element(By.CSS_SELECTOR, f'#tree-view .run[data-run="{start}"]')
        self.assertIn("expanded", expanded.get_attribute("class"))
        self.assertEqual(len(expanded.find_elements(By.CSS_SELECTOR, ".tok")), count)
        expanded.click()
        self.assertIn("collapsed", self.browser.find_element(
            By.CSS_SELECTOR, f'#tree-view .run[data-run="{start}"]').get_attribute("class"))

    def test_a_branch_point_shows_its_candidates_as_get_tree_has_them(self):
        _, tree = self.open_job(self.jobs["branch"])
        by_id = {n["id"]: n for n in tree["nodes"]}
        markers = self.browser.find_elements(By.CSS_SELECTOR, "#tree-view .branch-marker")
        self.assertGreater(len(markers), 0)
        for marker in markers[:3]:
            point = int(marker.get_attribute("data-branch"))
            self.browser.execute_script("arguments[0].scrollIntoView()", marker)
            marker.click()
            rows = self.browser.find_elements(By.CSS_SELECTOR, "#branch-panel .candidate")
            want = [c for c in by_id[point]["children"] if by_id[c]["status"] != "BACKSPACED"]
            self.assertEqual(sorted(int(r.get_attribute("data-node")) for r in rows), sorted(want))
            for row in rows:
                node = by_id[int(row.get_attribute("data-node"))]
                self.assertAlmostEqual(float(row.get_attribute("data-score")),
                                       node["branch_score"], places=5)
                won = node["status"] in ("COMMITTED", "INSERTED")
                self.assertEqual("winner" in row.get_attribute("class"), won)
            self.assertEqual(len([r for r in rows if "winner" in r.get_attribute("class")]), 1)

    def test_hover_shows_metrics_and_alternatives(self):
        _, tree = self.open_job(self.jobs["plain"])
        span = self.browser.find_element(By.CSS_SELECTOR, "#text-view .tok")
        ActionChains(self.browser).move_to_element(span).perform()
        tip = self.browser.find_element(By.ID, "tooltip")
        WebDriverWait(self.browser, 10).until(lambda b: tip.is_displayed())
        node = next(n for n in tree["nodes"] if n["id"] == int(span.get_attribute("data-node")))
        self.assertIn(node["strategy"], tip.text)
        self.assertIn("entropy", tip.text)
        self.assertEqual(len(node["top_logprobs"]), 5)  # As the job asked.
        WebDriverWait(self.browser, 10).until(lambda b: len(
            tip.find_elements(By.CSS_SELECTOR, ".tip-alternatives tr")) == 5)
        for alt, row in zip(node["top_logprobs"],
                            tip.find_elements(By.CSS_SELECTOR, ".tip-alternatives tr")):
            self.assertIn(f"{math.exp(alt['logprob']):.4f}", row.text)

    def test_hover_says_what_the_output_grammar_allowed(self):
        status, body = http_json(self.cluster.base + "/v1/completions", {
            "prompt": "JSON:", "max_tokens": 24, "seed": 3,
            "response_format": {"type": "json_object"}, "arbor": {"client_tag": "grammar"}})
        self.assertEqual(status, 200, body)
        _, tree = self.open_job(body["arbor"]["job_id"])
        span = self.browser.find_element(By.CSS_SELECTOR, "#text-view .tok")
        ActionChains(self.browser).move_to_element(span).perform()
        tip = self.browser.find_element(By.ID, "tooltip")
        WebDriverWait(self.browser, 10).until(lambda b: tip.is_displayed())
        node = next(n for n in tree["nodes"] if n["id"] == int(span.get_attribute("data-node")))
        self.assertGreaterEqual(node["allowed_tokens"], 1)
        self.assertIn("forced by the output grammar" if node["allowed_tokens"] == 1 else
                      f"output grammar allowed {node['allowed_tokens']} tokens", tip.text)

    def test_the_live_view_follows_a_running_job_to_its_end(self):
        result = {}
        thread = threading.Thread(target=lambda: result.update(
            job=self.cluster.complete(POLICIES["plain"], tag="live", max_tokens=1500)))
        thread.start()
        try:
            deadline = time.monotonic() + 30
            while not (live := self.api("/v1/jobs?tag=live")["jobs"]):
                self.assertLess(time.monotonic(), deadline, "the job never appeared")
                time.sleep(0.02)
            job_id = live[0]["job_id"]
            self.browser.get(f"{self.cluster.base}/ui/#/jobs/{job_id}")
            state = self.browser.find_element(By.ID, "job-state")
            WebDriverWait(self.browser, 30).until(lambda b: state.text == "running")
            running_renders = self.browser.execute_script("return window.arborViewer.renders")
            WebDriverWait(self.browser, 120).until(lambda b: state.text == "finished")
        finally:
            thread.join()
        self.assertEqual(result["job"], job_id)
        renders = self.browser.execute_script("return window.arborViewer.renders")
        self.assertGreater(renders, running_renders, "the view was not redrawn as the job ran")
        job = self.api(f"/v1/jobs/{job_id}")
        spans = [s for s in self.browser.find_elements(By.CSS_SELECTOR, "#text-view .tok")
                 if "st-backspaced" not in s.get_attribute("class")]
        self.assertEqual(same_characters("".join(s.get_attribute("textContent") for s in spans)),
                         same_characters(shown(job["text"])))
        self.assertEqual(len(spans), job["usage"]["generated_tokens"])

    def test_browsers_get_gzip_not_slow_brotli(self):
        request = urllib.request.Request(
            f"{self.cluster.base}/v1/jobs/{self.jobs['branch']}/tree",
            headers={"Accept-Encoding": "gzip, deflate, br"})
        with urllib.request.urlopen(request, timeout=30) as r:
            self.assertEqual(r.headers["Content-Encoding"], "gzip")
            tree = json.loads(gzip.decompress(r.read()))
        self.assertEqual(tree["job_id"], self.jobs["branch"])

    def test_an_unknown_job_says_so(self):
        self.browser.get(f"{self.cluster.base}/ui/#/jobs/no-such-job")
        box = self.browser.find_element(By.ID, "error-box")
        WebDriverWait(self.browser, 30).until(lambda b: box.is_displayed())
        self.assertIn("not known", box.text)
        # The 404 the page asked for is the one error the browser may log.
        for entry in self.browser.get_log("browser"):
            if entry["level"] == "SEVERE":
                self.assertIn("no-such-job", entry["message"])


if __name__ == "__main__":
    unittest.main()
