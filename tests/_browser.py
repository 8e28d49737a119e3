"""Headless Chromium from Debian's packages (``chromium``, ``chromium-driver``) through
Selenium and the system chromedriver, for tests/test_ui_browser.py and
scripts/ui_screenshots.py. (Playwright's own browser download cannot run here; Selenium
drives the browser the system already has.)
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)

CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",  # the tests may run as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)


def find_browser() -> tuple[str, str] | None:
    """``(chromium, chromedriver)`` paths, or ``None`` when either is missing."""
    browser = next((p for n in CHROMIUM_NAMES if (p := shutil.which(n))), None)
    driver = next((p for n in DRIVER_NAMES if (p := shutil.which(n))), None)
    return (browser, driver) if browser and driver else None


def start_browser(profile: Path, width: int = 1280, height: int = 900) -> Any:
    """A headless Chromium with a fresh profile folder; the caller quits it.

    Raises:
        RuntimeError: Chromium or chromedriver is not installed.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    found = find_browser()
    if found is None:
        raise RuntimeError("chromium and chromedriver are not installed")
    options = Options()
    options.binary_location = found[0]
    for arg in CHROMIUM_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--window-size={width},{height}")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=found[1]), options=options)
    driver.set_page_load_timeout(120)
    return driver
