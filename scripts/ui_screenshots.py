"""Retake the screenshots of docs/inspector.md in one command: ``python scripts/ui_screenshots.py``.

Builds a journal from the invented conversations shipped with the repository (the notebooks'
year of allotment chat for the user ``mira``, the package's sample for ``noor``), starts
``mnemon ui`` on it exactly as tests/test_ui_browser.py does, drives the same headless
Chromium (Debian's ``chromium`` and ``chromium-driver``) through Selenium, and writes the
PNG files to ``docs/images/`` (or ``--out``). Offline: the bundled embedder, the rule
planner and the local judge.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from _browser import start_browser  # noqa: E402
from _ui_server import env, running_ui  # noqa: E402

MIRA = ("users", "mira")
NOOR = ("users", "noor")
QUESTION = "Where does Mira work now?"


def child_env() -> dict[str, str]:
    """The tests' environment for the children, with the real bundled embedder unless
    ``MNEMON_EMBEDDINGS`` is set."""
    out = env()
    if os.environ.get("MNEMON_EMBEDDINGS") is None:
        out.pop("MNEMON_EMBEDDINGS", None)
    return out


def build(db: Path) -> None:
    """Ingest the two invented conversations with the real command."""
    from mnemon_langgraph.loaders import SAMPLE_PATH

    for source, ns in (
        (REPO / "notebooks" / "data" / "allotment_year.json", MIRA),
        (SAMPLE_PATH, NOOR),
    ):
        parts = [a for p in ns for a in ("--namespace", p)]
        cmd = [sys.executable, "-m", "mnemon_langgraph.cli", "ingest", str(source), "--db"]
        subprocess.run([*cmd, str(db), *parts, "--no-progress"], check=True, env=child_env())


def shoot(driver, url: str, out: Path, height: int = 900, open_first: str = "") -> None:  # type: ignore[no-untyped-def]
    """Open ``url`` and save the window as ``out`` (``open_first``: a CSS selector of a
    ``<details>`` summary to open first)."""
    from selenium.webdriver.common.by import By

    driver.set_window_size(1280, height)
    driver.get(url)
    if open_first:
        driver.find_element(By.CSS_SELECTOR, open_first).click()
    driver.save_screenshot(str(out))
    print("wrote", out.relative_to(REPO) if out.is_relative_to(REPO) else out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mnemon-shots-") as tmp:
        folder = Path(tmp)
        build(folder / "memory.db")
        with running_ui(folder / "memory.db", folder / "ui.log", environ=child_env()) as url:
            base = url.split("/?", 1)[0]
            driver = start_browser(folder / "profile")
            try:
                driver.get(url)  # the token: sets the cookie
                mira = [("ns", p) for p in MIRA]
                shoot(driver, base + "/", args.out / "ui-namespaces.png", 420)
                shoot(driver, f"{base}/ns?{urlencode(mira)}", args.out / "ui-records.png")
                read = urlencode([*mira, ("message", QUESTION), ("compare", "3000")])
                shoot(
                    driver, f"{base}/read?{read}", args.out / "ui-read.png", 1400, "#view-0 summary"
                )
            finally:
                driver.quit()


if __name__ == "__main__":
    main()
