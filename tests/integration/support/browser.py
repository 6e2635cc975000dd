"""Headless Chromium through Selenium and chromedriver (Debian's chromium, chromium-driver and
python3-selenium) for the tests that read the web viewer as a user would. Import after putting
this folder on sys.path; `available()` says why not when it cannot run here."""

import shutil

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError:  # The dependency script installs it.
    webdriver = None

CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def unavailable():
    """None when a browser can be started here, else the reason."""
    if webdriver is None:
        return "selenium is not installed in this Python"
    if shutil.which("chromedriver") is None:
        return "chromedriver is not installed (Debian: chromium-driver)"
    return None


def chrome(accept_certificates=False):
    """A headless Chromium keeping the console log; `accept_certificates` trusts any server
    certificate (a test CA the browser does not know)."""
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    if accept_certificates:
        options.add_argument("--ignore-certificate-errors")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
