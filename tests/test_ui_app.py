"""The inspector in this process (Starlette's test client): the guard's rules one by one,
and the pages on both stores (SQLite and PostgreSQL) with the same answers.

tests/test_ui.py and tests/test_ui_browser.py drive the real command; these are the fast
checks of the same rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from mnemon_langgraph.ui.app import Inspector, create_app, is_loopback
from mnemon_langgraph.ui.guard import CSP, Guard, allowed_hosts

TOKEN = "t0ken-of-this-start-0123456789"


def _guarded() -> TestClient:
    def hello(request: object) -> PlainTextResponse:
        return PlainTextResponse("hello")

    app = Guard(
        Starlette(routes=[Route("/", hello), Route("/a/b", hello)]),
        token=TOKEN,
        hosts=allowed_hosts("127.0.0.1", 8000),
        cookie="mnemon_ui_8000",
    )
    return TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False)


def test_the_token_sets_a_strict_cookie_and_leaves_the_url() -> None:
    client = _guarded()
    first = client.get("/a/b", params=[("ns", "users"), ("ns", "ann"), ("token", TOKEN)])
    assert first.status_code == 303
    assert first.headers["location"] == "/a/b?ns=users&ns=ann"  # repeated params kept
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"mnemon_ui_8000={TOKEN};") and "SameSite=Strict" in cookie
    assert client.get("/", headers={"cookie": f"mnemon_ui_8000={TOKEN}"}).text == "hello"
    for cookie_value in ("", "mnemon_ui_8000=wrong", f"mnemon_ui_9000={TOKEN}"):
        refused = client.get("/", headers={"cookie": cookie_value})
        assert refused.status_code == 401 and refused.headers["content-security-policy"] == CSP


def test_host_origin_and_fetch_site_are_checked() -> None:
    client = _guarded()
    ok = {"cookie": f"mnemon_ui_8000={TOKEN}"}
    assert client.get("/", headers=ok | {"host": "localhost:8000"}).status_code == 200
    assert client.get("/", headers=ok | {"origin": "http://127.0.0.1:8000"}).status_code == 200
    for bad in (
        {"host": "127.0.0.1:8001"},
        {"host": "rebound.example:8000"},
        {"origin": "http://rebound.example:8000"},
        {"origin": "https://127.0.0.1:8000"},
        {"sec-fetch-site": "cross-site"},
    ):
        got = client.get("/", headers=ok | bad)
        assert got.status_code == 403 and got.headers["x-frame-options"] == "DENY", bad


def test_allowed_hosts_and_loopback() -> None:
    assert allowed_hosts("127.0.0.1", 5) == {"127.0.0.1:5", "localhost:5", "[::1]:5"}
    assert allowed_hosts("192.168.1.4", 5) == {"192.168.1.4:5"}
    assert "[::1]:5" in allowed_hosts("::1", 5)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert not is_loopback("example.com")


@pytest.fixture
def inspector(journal_target: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Inspector]:
    from mnemon_langgraph.judges.fake import ScriptedDecisionModel
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    store = MnemonStore(journal_target)
    msgs = [
        Message(text=f"day {i}: " + "watering the beans " * 30, speaker="Ann", session=1 + i // 30,
                timestamp=datetime(2024, 3, 1 + i // 30))
        for i in range(70)
    ]  # fmt: skip
    msgs.append(Message(text="My cat is called Miso", speaker="Ann", session=4,
                        timestamp=datetime(2024, 4, 2)))  # fmt: skip
    store.ingest(("users", "ann"), msgs, origin="t")
    store.ingest(("users", "bob"), [Message(text="Bob's code is 4471", speaker="Bob")], origin="t")
    yield Inspector(store, judge=ScriptedDecisionModel(default=0.6), items=store.item_store())
    store.close()


def test_pages_on_both_stores(inspector: Inspector) -> None:
    from mnemon_langgraph.errors import InputError
    from mnemon_langgraph.ui.app import PAGE

    ann = ("users", "ann")
    rows = {tuple(r["namespace"]): r for r in inspector.namespaces()[0]}
    assert rows[ann]["records"] >= 71 and rows[ann]["first"] == "2024-03-01"
    assert rows[ann]["last"] == "2024-04-02"
    first, nxt, _ = inspector.records(ann, {})
    assert len(first) == PAGE and nxt is not None
    after = int(nxt.rsplit("after=", 1)[1])
    rest, last, _ = inspector.records(ann, {"after": str(after)})
    assert rest and last is None and {r.id for r in first}.isdisjoint(r.id for r in rest)
    found, _, _ = inspector.records(ann, {"q": "cat", "from": "2024-04-01"})
    assert found and all(r.date >= datetime(2024, 4, 1) for r in found)
    reads, key = inspector.read(ann, "What is my cat called?", [12_000, 600])
    assert any("Miso" in r.text for r in reads[0][1].records)
    assert all("4471" not in r.text for _, v in reads for r in v.records)
    assert inspector.saved(key)[1] == "What is my cat called?"
    with pytest.raises(InputError):
        inspector.namespace(["users", "nobody"])
    with pytest.raises(InputError):
        inspector.budget("10")
    with pytest.raises(Exception, match="read-only"):
        inspector.forget(ann, first[0].id)


class _CountingStore:
    """The inspector's store, its record reads counted: the page sizes asked for and the
    records that reached Python."""

    def __init__(self, store: object) -> None:
        self.store, self.pulled, self.limits = store, 0, []  # type: ignore[var-annotated]

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def records(self, namespace: object, **kw: object) -> Iterator[object]:
        self.limits.append(kw.get("limit"))
        for record in self.store.records(namespace, **kw):  # type: ignore[attr-defined]
            self.pulled += 1
            yield record


def test_records_are_browsed_by_date_without_words_a_page_at_a_time(
    inspector: Inspector,
) -> None:
    """Issue 47: browse by date (and session) with no search words, paged by keyset on seq
    with the dates in the store's query: each page pulls at most PAGE + 1 records."""
    from mnemon_langgraph.ui.app import PAGE

    ann = ("users", "ann")
    every = list(inspector.store.records(ann))
    march = [r.id for r in every if r.date and r.date < datetime(2024, 3, 3)]
    assert len(march) > PAGE and len(march) < len(every)  # two pages, and others left out
    counting = _CountingStore(inspector.store)
    inspector.store = counting
    dates = {"from": "2024-03-01", "to": "2024-03-02"}
    first, nxt, note = inspector.records(ann, dates)
    assert len(first) == PAGE and nxt is not None and "dated 2024-03-01 to 2024-03-02" in note
    assert counting.limits == [PAGE + 1] and counting.pulled <= PAGE + 1
    assert "from=2024-03-01" in nxt and "to=2024-03-02" in nxt
    counting.pulled = 0
    rest, last, _ = inspector.records(ann, {**dates, "after": nxt.rsplit("after=", 1)[1]})
    assert last is None and counting.pulled <= PAGE + 1
    assert [r.id for r in first + rest] == march  # all of them, in the order written
    # one bound alone, and a session with dates (seq order within the session)
    april, _, _ = inspector.records(ann, {"from": "2024-04-01"})
    assert [r.text for r in april] == [r.text for r in every if r.date >= datetime(2024, 4, 1)]
    assert any("Miso" in r.text for r in april)
    both, _, note = inspector.records(ann, {"session": "2", "to": "2024-03-02"})
    assert both and all(r.session == 2 and r.date < datetime(2024, 3, 3) for r in both)
    assert note.startswith("session 2, dated")
    none, last, _ = inspector.records(ann, {"from": "2025-01-01"})
    assert none == [] and last is None
    # the page itself: a date browse without words shows the records and pages on
    app = create_app(
        inspector, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8080), cookie="mnemon_ui_8080"
    )
    client = TestClient(app, base_url="http://127.0.0.1:8080")
    client.cookies.set("mnemon_ui_8080", TOKEN)
    page = client.get("/ns", params=[("ns", "users"), ("ns", "ann"), ("from", "2024-04-01")])
    assert page.status_code == 200 and "Miso" in page.text and "day 3:" not in page.text


def test_create_app_serves_its_own_static_files(inspector: Inspector) -> None:
    app = create_app(
        inspector, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8080), cookie="mnemon_ui_8080"
    )
    client = TestClient(app, base_url="http://127.0.0.1:8080")
    client.cookies.set("mnemon_ui_8080", TOKEN)
    js = client.get("/static/ui.js")
    assert js.status_code == 200 and "data-confirm" in js.text
    assert js.headers["content-type"].startswith("text/javascript")
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/static/app.py").status_code == 404
    page = client.get("/")
    assert page.status_code == 200 and "users / ann" in page.text
