"""``mnemon ui`` over plain HTTP: the token, Host and Origin checks refuse, every response
carries the Content-Security-Policy, pages escape what is stored, one user's pages never
show another's records, records page in the store, and nothing is written unless
``--allow-forget`` (then a forget is audited).

The server is the real command in a child process on a loopback port, on a real SQLite
journal (tests/_ui_server.py); tests/test_ui_browser.py drives the same server in Chromium.
"""

from __future__ import annotations

import hashlib
import http.client
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from _ui_server import (
    ANN,
    ANN_ANSWER,
    BOB,
    BOB_SECRET,
    EVIL_NAMESPACE,
    PAGED,
    PAGED_RECORDS,
    build_journal,
    env,
    running_ui,
)

from mnemon_langgraph.ui.guard import CSP

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


class Client:
    """HTTP to the server with a chosen Host, Origin and cookie (urllib's opener would fix
    the Host and follow redirects, which these tests must see)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.netloc = parts.netloc
        self.host, self.port = parts.hostname or "", parts.port or 80
        self.token = dict(p.split("=", 1) for p in parts.query.split("&"))["token"]
        self.cookie = ""

    def get(
        self, path: str, *, headers: dict[str, str] | None = None, method: str = "GET",
        body: str | None = None, cookie: bool = True,
    ) -> tuple[int, dict[str, str], str]:  # fmt: skip
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        sent = {"Host": self.netloc} | (headers or {})
        if cookie and self.cookie:
            sent["Cookie"] = self.cookie
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=sent)
        resp = conn.getresponse()
        text = resp.read().decode("utf-8")
        got = {k.lower(): v for k, v in resp.getheaders()}
        conn.close()
        return resp.status, got, text

    def login(self) -> None:
        status, headers, _ = self.get(f"/?token={self.token}", cookie=False)
        assert status == 303 and headers["location"] == "/"
        assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
        self.cookie = headers["set-cookie"].split(";", 1)[0]


def ns_query(namespace: tuple[str, ...], **params: str) -> str:
    return urlencode([("ns", p) for p in namespace] + list(params.items()))


def tree_digest(*paths: Path) -> dict[str, str]:
    """Every file under ``paths`` and its content's hash."""
    out = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    mp = pytest.MonkeyPatch()
    mp.setenv("MNEMON_EMBEDDINGS", "fake")
    path = tmp_path_factory.mktemp("ui") / "memory.db"
    build_journal(path)
    mp.undo()
    return path


@pytest.fixture(scope="module")
def server(journal: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    before = tree_digest(journal.parent)
    log = tmp_path_factory.mktemp("ui-log") / "ui.log"
    with running_ui(journal, log) as url:
        client = Client(url)
        client.login()
        client.before = before  # type: ignore[attr-defined]
        client.folder = journal.parent  # type: ignore[attr-defined]
        yield client


def test_the_url_is_loopback_and_the_token_is_required(server: Client) -> None:
    assert server.host == "127.0.0.1" and len(server.token) >= 24
    for headers in ({}, {"Cookie": "mnemon_ui_1=nope"}):
        status, _, text = server.get("/", headers=headers, cookie=False)
        assert status == 401 and "token" in text
    status, _, _ = server.get("/?token=wrong", cookie=False)
    assert status == 401
    status, _, _ = server.get("/static/ui.css", cookie=False)
    assert status == 401  # every request, static files too
    assert server.get("/")[0] == 200


def test_a_foreign_host_or_origin_is_refused(server: Client) -> None:
    """DNS rebinding names another Host; a cross-site request carries another Origin."""
    for headers in (
        {"Host": f"attacker.example:{server.port}"},
        {"Host": "attacker.example"},
        {"Origin": "http://attacker.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        status, _, text = server.get("/", headers=headers)
        assert status == 403 and "refused" in text, headers
    # even with the token in the URL: the token is no way past the Host check
    status, _, _ = server.get(f"/?token={server.token}", headers={"Host": "evil:1"}, cookie=False)
    assert status == 403
    for ok in ({"Host": f"localhost:{server.port}"}, {"Origin": f"http://{server.netloc}"}):
        assert server.get("/", headers=ok)[0] == 200, ok


def test_every_response_sends_the_policy(server: Client) -> None:
    paths = ["/", "/static/ui.js", "/ns?" + ns_query(ANN), "/nope", "/ns?ns=users&ns=nobody"]
    for path in paths:
        _, headers, _ = server.get(path)
        assert headers["content-security-policy"] == CSP, path
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert headers["x-frame-options"] == "DENY"
    for refused in ({"Origin": "http://x.example"}, {"Cookie": ""}):
        _, headers, _ = server.get("/", headers=refused, cookie=False)
        assert headers["content-security-policy"] == CSP


def test_namespaces_list_counts_and_dates(server: Client) -> None:
    status, _, page = server.get("/")
    assert status == 200
    assert "users / ann" in page and "users / bob" in page
    row = re.search(r"users / paged</a></td><td>([\d,]+)</td><td>([\d-]+)</td>", page)
    assert row and int(row.group(1).replace(",", "")) >= PAGED_RECORDS
    assert row.group(2) == "2024-01-01"


def test_stored_payloads_are_escaped_everywhere(server: Client) -> None:
    pages = [
        "/",
        "/ns?" + ns_query(ANN),
        "/ns?" + ns_query(EVIL_NAMESPACE),
        "/read?" + ns_query(ANN, message="payloads script onerror"),
        "/items?" + ns_query(EVIL_NAMESPACE),
        "/items?" + ns_query(ANN),
    ]
    for path in pages:
        status, _, page = server.get(path)
        assert status == 200, path
        body = page.split("</head>", 1)[1]
        assert not re.search(r"<script|<img|<a id=\"jslink\"|href=\"javascript:", body), path
        assert not re.search(r"<[^<>]*\bonerror\s*=", body), path
    _, _, page = server.get("/ns?" + ns_query(ANN))
    assert "&lt;script&gt;window.__pwned" in page  # stored, shown as text
    assert "onerror=&quot;" in page and "javascript:window.__pwned" in page


def test_items_link_to_their_records(server: Client) -> None:
    _, _, page = server.get("/items?" + ns_query(ANN))
    assert "Ann named her cat Miso" in page and "&lt;script&gt;window.__pwned" in page
    link = re.search(r'href="(/record\?[^"]+)"', page)
    assert link
    status, _, record = server.get(link.group(1).replace("&amp;", "&"))
    assert status == 200 and ANN_ANSWER in record and "Ann named her cat Miso" in record
    _, _, bob = server.get("/items?" + ns_query(BOB))
    assert "Miso" not in bob and "no consolidated items" in bob


def test_one_users_pages_never_show_anothers_records(server: Client) -> None:
    _, _, ann = server.get("/ns?" + ns_query(ANN))
    assert ANN_ANSWER in ann and "locker code" not in ann
    _, _, read = server.get("/read?" + ns_query(ANN, message="What is Bob's locker code?"))
    assert "locker code is 4471" not in read and "4471" not in read
    _, _, bob = server.get("/read?" + ns_query(BOB, message="What is my locker code?"))
    assert BOB_SECRET.replace("'", "&#x27;") in bob and "Miso" not in bob


def test_a_read_shows_the_answer_and_why(server: Client) -> None:
    status, _, page = server.get(
        "/read?" + ns_query(ANN, message="What is my cat called?", budget="3000", compare="400")
    )
    assert status == 200
    assert "Miso" in page and "Budget 3,000 characters" in page and "Budget 400" in page
    assert "judgments" in page and "proposition" in page
    assert "Pooled but left out" in page
    saved = re.search(r'id="save" href="(/save/[0-9a-f]+)"', page)
    assert saved
    status, headers, file = server.get(saved.group(1))
    assert status == 200 and "attachment" in headers["content-disposition"]
    assert "Miso" in file and "<script" not in file.lower() and "/static/" not in file


def test_records_page_in_the_store(server: Client) -> None:
    _, _, first = server.get("/ns?" + ns_query(PAGED))
    nxt = re.search(r'id="next" href="([^"]+)"', first)
    assert nxt and "after=" in nxt.group(1)
    _, _, second = server.get(nxt.group(1).replace("&amp;", "&"))
    one = set(re.findall(r"note number (\d+)", first))
    two = set(re.findall(r"note number (\d+)", second))
    assert one and two and not one & two
    _, _, session = server.get("/ns?" + ns_query(PAGED, session="2"))
    assert set(re.findall(r"note number (\d+)", session)) == {str(i) for i in range(40, 80)}
    _, _, found = server.get("/ns?" + ns_query(ANN, q="cat", **{"from": "2024-01-05"}))
    assert "Miso" in found and "tomatoes" not in found  # the date bound leaves session 1 out


def test_bad_parameters_are_a_page_not_a_crash(server: Client) -> None:
    for path in (
        "/ns?" + ns_query(ANN, session="x"),
        "/ns?" + ns_query(ANN, q="cat", **{"from": "yesterday"}),
        "/read?" + ns_query(ANN, message="hi", budget="5"),
        "/ns?ns=users&ns=nobody",
        "/record?" + ns_query(ANN, id="r-nothere"),
    ):
        status, _, page = server.get(path)
        assert status == 400 and "Cannot show this" in page, path


def test_read_only_server_forgets_nothing_and_writes_nothing(server: Client) -> None:
    _, _, page = server.get("/ns?" + ns_query(ANN))
    rid = re.search(r"&amp;id=(r-[0-9a-f]+)", page)
    assert rid
    _, _, record = server.get(f"/record?{ns_query(ANN, id=rid.group(1))}")
    assert 'id="forget"' not in record
    body = ns_query(ANN, id=rid.group(1), token="")
    status, _, _ = server.get("/forget", method="POST", body=body)
    assert status == 403
    assert unchanged(server.before, tree_digest(server.folder))  # type: ignore[attr-defined]


def unchanged(before: dict[str, str], after: dict[str, str]) -> bool:
    """The database file and the index folder hold the same bytes. A reader of a WAL-mode
    SQLite file may leave SQLite's shared-memory file (``-shm``, locks only) and an empty
    ``-wal`` behind; an ``-wal`` holding pages would be a write."""
    empty = hashlib.sha256(b"").hexdigest()
    kept = {k: v for k, v in after.items() if not k.endswith("-shm")}
    wal = {k: v for k, v in kept.items() if k.endswith("-wal") and k not in before}
    assert all(v == empty for v in wal.values()), "the read-only server wrote WAL pages"
    return {k: v for k, v in kept.items() if k not in wal} == before


def test_a_read_only_server_builds_missing_indexes_in_memory_only(
    journal: Path, tmp_path: Path
) -> None:
    """A journal whose index folder is missing: the server searches from indexes built
    in memory and writes no folder beside the journal."""
    import sqlite3

    folder = tmp_path / "bare"
    folder.mkdir()
    with sqlite3.connect(f"{journal.as_uri()}?mode=ro", uri=True) as src:
        dst = sqlite3.connect(folder / "memory.db")
        src.backup(dst)
        dst.close()
    before = tree_digest(folder)
    with running_ui(folder / "memory.db", tmp_path / "ui.log") as url:
        client = Client(url)
        client.login()
        status, _, page = client.get("/read?" + ns_query(ANN, message="What is my cat called?"))
        assert status == 200 and "Miso" in page
    assert not (folder / "memory.db.indexes").exists()
    assert unchanged(before, tree_digest(folder))


def test_allow_forget_forgets_one_record_audited(
    journal: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from mnemon_langgraph.store import MnemonStore

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    copy = tmp_path / "copy.db"  # the module's read-only server keeps the original
    with sqlite3.connect(f"{journal.as_uri()}?mode=ro", uri=True) as src:
        dst = sqlite3.connect(copy)
        src.backup(dst)
        dst.close()
    with MnemonStore(copy) as store:
        cat = next(r for r in store.records(ANN) if "Miso" in r.text)
    with running_ui(copy, tmp_path / "ui.log", "--allow-forget") as url:
        client = Client(url)
        client.login()
        _, _, page = client.get(f"/record?{ns_query(ANN, id=cat.id)}")
        token = re.search(r'name="token" value="([^"]+)"', page)
        assert token and 'id="forget"' in page
        body = ns_query(ANN, id=cat.id, token=token.group(1))
        foreign = {"Origin": "http://attacker.example"}
        assert client.get("/forget", method="POST", body=body, headers=foreign)[0] == 403
        wrong = ns_query(ANN, id=cat.id, token="guess")
        assert client.get("/forget", method="POST", body=wrong)[0] == 403
        status, headers, _ = client.get("/forget", method="POST", body=body)
        assert status == 303 and "forgot" in headers["location"]
    with MnemonStore(copy) as store:
        assert store.get_records(ANN, [cat.id]) == []
        forgotten = [e for e in store.audit_log(ANN) if e.actor == "mnemon ui"]
        assert len(forgotten) == 1 and list(forgotten[0].record_ids) == [cat.id]
        items = store.item_store()
        assert items.linked_items(ANN, [cat.id]) == []  # the item made from it went too
        items.close()


def test_a_non_loopback_bind_needs_a_flag(journal: Path) -> None:
    args = [sys.executable, "-m", "mnemon_langgraph.cli", "ui", "--db", str(journal)]
    done = subprocess.run(
        [*args, "--host", "0.0.0.0"], env=env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--allow-remote" in done.stderr


class CountingStore:
    """A store whose record reads are counted: how many records each page pulled."""

    def __init__(self, store: object) -> None:
        self.store, self.pulled, self.limits = store, 0, []

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def records(self, namespace: object, **kw: object):  # type: ignore[no-untyped-def]
        self.limits.append(kw.get("limit"))
        for record in self.store.records(namespace, **kw):  # type: ignore[attr-defined]
            self.pulled += 1
            yield record

    def session_records(self, namespace: object, session: int, **kw: object) -> list:  # type: ignore[type-arg]
        got = self.store.session_records(namespace, session, **kw)  # type: ignore[attr-defined]
        self.pulled += len(got)
        return got


def test_pages_read_a_page_not_the_namespace(journal: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Opening a namespace reads one page from the store (keyset on seq), whatever its size:
    the paged namespace holds more than two pages, and every read is bounded."""
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.store.embedded._journal import Journal
    from mnemon_langgraph.ui.app import PAGE, Inspector

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    with MnemonStore(journal, journal=Journal(journal, read_only=True)) as real:
        assert real.count(PAGED) > 2 * PAGE
        store = CountingStore(real)
        inspector = Inspector(store)
        rows, _ = inspector.namespaces()
        assert {tuple(r["namespace"]) for r in rows} >= {ANN, BOB, PAGED}
        assert store.limits and all(limit == 1 for limit in store.limits)
        store.pulled, store.limits = 0, []
        first, nxt, _ = inspector.records(PAGED, {})
        assert len(first) == PAGE and nxt and store.pulled <= PAGE + 1
        assert store.limits == [PAGE + 1]
        after = int(nxt.rsplit("after=", 1)[1])
        second, _, _ = inspector.records(PAGED, {"after": str(after)})
        assert second and second[0].seq > first[-1].seq
        store.pulled = 0
        inspector.records(PAGED, {"session": "2"})
        assert 0 < store.pulled <= PAGE + 1


def test_a_non_loopback_bind_with_the_flag_warns(journal: Path, tmp_path: Path) -> None:
    log = tmp_path / "ui.log"
    with running_ui(journal, log, "--host", "0.0.0.0", "--allow-remote") as url:
        client = Client(url)
        client.login()
        assert client.get("/")[0] == 200
    assert "WARNING: listening on 0.0.0.0" in log.read_text()
