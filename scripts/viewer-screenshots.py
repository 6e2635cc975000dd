#!/usr/bin/env python3
"""Screenshots of the web viewer for the docs: a job's view with a token's card open, and the
same job with its first branch point's candidates shown.

    .venv/bin/python scripts/viewer-screenshots.py http://127.0.0.1:8000 JOB_ID docs/images

writes viewer-job.png and viewer-branch.png (headless Chromium through Selenium, 1500×1160).
The README's images were made from a SmolLM2-135M-Instruct chat answer served by `arbor up`:
"Give me three tips for learning to play the guitar.", max_tokens 200, seed 3, top_logprobs 5.
"""

import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base, job, out = sys.argv[1:]
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 "--window-size=1500,1160"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        browser.get(f"{base}/ui/#/jobs/{job}")
        WebDriverWait(browser, 60).until(
            lambda b: b.execute_script("return window.arborViewer.renders > 0"))
        tokens = browser.find_elements(By.CSS_SELECTOR, "#text-view .tok")
        ActionChains(browser).move_to_element(tokens[min(30, len(tokens) - 1)]).perform()
        WebDriverWait(browser, 10).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, "#tooltip .tip-alternatives, #tooltip .tip-note"))
        os.makedirs(out, exist_ok=True)
        browser.save_screenshot(os.path.join(out, "viewer-job.png"))
        marker = browser.find_element(By.CSS_SELECTOR, "#tree-view .branch-marker")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", marker)
        marker.click()
        time.sleep(0.3)  # The panel is drawn synchronously; let the scroll settle.
        browser.save_screenshot(os.path.join(out, "viewer-branch.png"))
    finally:
        browser.quit()


if __name__ == "__main__":
    main()
