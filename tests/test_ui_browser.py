"""``mnemon ui`` in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, installed by ``.ci/run``) driven by Selenium.

Open the namespace list, open a user, ask a question, see the record that answers it in the
View (a screenshot goes to pytest's tmp_path); stored ``<script>``, ``onerror=`` and
``javascript:`` payloads in record text, speaker names, namespace parts and consolidated
items never run; one
user's pages never show the other's records; the pages cause no Content-Security-Policy
violation (they hold no inline script or style).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from _browser import find_browser, start_browser
from _ui_server import (
    ANN,
    ANN_ANSWER,
    BOB,
    EVIL_NAMESPACE,
    PAYLOADS,
    build_journal,
    running_ui,
)

pytest.importorskip("starlette")
if find_browser() is None:
    pytest.skip(
        "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )
pytest.importorskip("selenium")

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = pytest.mark.slow  # a browser and a server start


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    """A browser that has opened the URL ``mnemon ui`` printed; and the server's base URL."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MNEMON_EMBEDDINGS", "fake")
    folder = tmp_path_factory.mktemp("ui-browser")
    build_journal(folder / "memory.db")
    mp.undo()
    with running_ui(folder / "memory.db", folder / "ui.log") as url:
        driver = start_browser(folder / "profile")
        try:
            driver.get(url)  # the token sets the cookie, then the page redirects
            yield driver, url.split("/?", 1)[0]
        finally:
            driver.quit()


def _open(driver: Any, base: str, path: str, namespace: tuple[str, ...], **params: str) -> None:
    query = urlencode([("ns", p) for p in namespace] + list(params.items()))
    driver.get(f"{base}{path}?{query}")


def _nothing_ran(driver: Any) -> None:
    assert driver.title != "pwned"  # what every payload would set (the page's own title
    # may quote a payload as text, e.g. a namespace part)
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert driver.find_elements(By.ID, "jslink") == []
    assert driver.find_elements(By.CSS_SELECTOR, "main script, main img") == []


def _csp_violations(driver: Any) -> list[str]:
    return [
        e["message"]
        for e in driver.get_log("browser")
        if "Content Security Policy" in e.get("message", "")
    ]


def test_open_a_user_ask_and_see_the_answer(site: tuple[Any, str], tmp_path: Path) -> None:
    driver, _ = site
    driver.get(site[1] + "/")
    assert driver.title.startswith("Namespaces")
    driver.find_element(By.LINK_TEXT, "users / ann").click()
    WebDriverWait(driver, 30).until(ec.title_contains("Records of users / ann"))
    main = driver.find_element(By.TAG_NAME, "main").text
    assert ANN_ANSWER in main and "locker" not in main
    driver.find_element(By.LINK_TEXT, "read").click()
    box = WebDriverWait(driver, 30).until(ec.presence_of_element_located((By.ID, "message")))
    box.send_keys("What is my cat called?")
    driver.find_element(By.ID, "ask").click()
    view = WebDriverWait(driver, 120).until(ec.presence_of_element_located((By.ID, "view-0")))
    assert ANN_ANSWER in view.text  # the record that answers it, in the View
    assert "judgments" in view.text
    shot = tmp_path / "read.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    assert _csp_violations(driver) == []


def test_stored_payloads_do_not_run(site: tuple[Any, str]) -> None:
    driver, base = site
    pages = [
        ("/", (), {}),
        ("/ns", ANN, {}),
        ("/ns", EVIL_NAMESPACE, {}),
        ("/read", ANN, {"message": "payloads script onerror javascript"}),
        ("/read", EVIL_NAMESPACE, {"message": "click me"}),
        ("/items", ANN, {}),  # a consolidated item with payloads in its topic and text
    ]
    for path, namespace, params in pages:
        if namespace:
            _open(driver, base, path, namespace, **params)
        else:
            driver.get(base + path)
        _nothing_ran(driver)
    _open(driver, base, "/ns", EVIL_NAMESPACE)
    shown = driver.find_element(By.TAG_NAME, "body").text
    assert "<script>window.__pwned = 1" in shown  # the payload reached the page, as text
    assert "<script>document.title='pwned'</script>" in shown  # the namespace part too
    assert _csp_violations(driver) == []


def test_the_payloads_would_run_unescaped(site: tuple[Any, str]) -> None:
    """A negative control: the same payloads, written as markup, do run in this browser,
    so the checks above would see them."""
    driver, _ = site
    driver.get("data:text/html," + quote(PAYLOADS[1]))
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return window.__pwned") == 2)
    assert driver.title == "pwned"


def test_one_users_pages_never_show_the_others(site: tuple[Any, str]) -> None:
    driver, base = site
    _open(driver, base, "/read", ANN, message="What is Bob's locker code?")
    WebDriverWait(driver, 120).until(ec.presence_of_element_located((By.ID, "view-0")))
    assert "4471" not in driver.page_source
    _open(driver, base, "/ns", BOB)
    assert "Miso" not in driver.page_source and "4471" in driver.page_source


def test_forget_asks_first_then_forgets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --allow-forget: the package's script (allowed by the policy, the only script)
    asks before the form is sent; dismissed, nothing is forgotten; accepted, the record is."""
    from mnemon_langgraph.store import MnemonStore

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    build_journal(tmp_path / "memory.db")
    with MnemonStore(tmp_path / "memory.db") as store:
        cat = next(r for r in store.records(ANN) if "Miso" in r.text)
    with running_ui(tmp_path / "memory.db", tmp_path / "ui.log", "--allow-forget") as url:
        driver = start_browser(tmp_path / "profile")
        try:
            driver.get(url)
            base = url.split("/?", 1)[0]
            _open(driver, base, "/record", ANN, id=cat.id)
            driver.find_element(By.ID, "forget").click()
            WebDriverWait(driver, 10).until(ec.alert_is_present()).dismiss()
            assert driver.find_elements(By.ID, "forget")  # still on the record's page
            driver.find_element(By.ID, "forget").click()
            WebDriverWait(driver, 10).until(ec.alert_is_present()).accept()
            WebDriverWait(driver, 30).until(ec.title_contains("Records of"))
            assert f"forgot {cat.id}" in driver.find_element(By.CLASS_NAME, "flash").text
            assert ANN_ANSWER not in driver.page_source
            assert _csp_violations(driver) == []
        finally:
            driver.quit()
    with MnemonStore(tmp_path / "memory.db") as store:
        assert store.get_records(ANN, [cat.id]) == []
