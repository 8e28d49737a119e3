"""A LangGraph server whose own store is the memory: ``"store": {"path": ...}`` in langgraph.json.

``langgraph dev`` loads :func:`base_store_from_env`; the server's store API (what Studio's
memory tab and ``langgraph-sdk``'s ``client.store`` use) then puts items into the journal's
database and searches them together with the journal's records. The ``store.ttl`` of
``langgraph.json`` reaches the store through ``LANGGRAPH_STORE`` (the server hands a custom
store none), and the store's own sweeper runs in the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _processes import stop_group

from mnemon_langgraph.integrations.basestore import MnemonBaseStore, base_store_from_env

REPO = Path(__file__).resolve().parents[1]
BOOT_TIMEOUT_S = 90.0


def _seed(db: Path) -> None:
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    with MnemonStore(db) as store:
        store.ingest(
            ("memories", "ada"),
            [Message("I adopted a grey cat called Pixel", "Ada", id="d1", session=1,
                     timestamp=datetime(2024, 3, 2, 9, 0))],
            origin="seed",
        )  # fmt: skip


def _seed_expired(db: Path) -> None:
    """An item whose TTL ran out an hour before the server starts (written on a clock two
    hours back): the server's sweeper deletes it when it starts."""
    from mnemon_langgraph.store import MnemonStore

    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    with MnemonStore(db) as store, MnemonBaseStore(store, clock=lambda: two_hours_ago) as base:
        base.put(("memories", "ada"), "stale", {"content": "QzvStaleMarker"}, ttl=60)


def test_factory_opens_and_closes_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    db = tmp_path / "j.db"
    _seed(db)
    with base_store_from_env({"MNEMON_DB": str(db)}) as base:
        assert isinstance(base, MnemonBaseStore)
        base.put(("memories", "ada"), "k", {"content": "likes tea"})
        found = base.search(("memories", "ada"), query="cat Pixel tea")
        assert {i.value.get("kind", "item") for i in found} == {"item", "record"}
    with pytest.raises(Exception, match="closed"):
        base.get(("memories", "ada"), "k")
    with base_store_from_env({"MNEMON_DB": str(db)}) as again:
        assert again.get(("memories", "ada"), "k") is not None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    exe = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which(
        "langgraph"
    )
    if exe is None:
        pytest.fail("langgraph-cli[inmem] (the studio extra, in dev) is not installed")
    db = tmp_path / "journal.db"
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")  # the seed and the server: one model
    env = dict(os.environ)
    _seed(db)
    _seed_expired(db)
    app = tmp_path / "app"
    app.mkdir()
    (app / "langgraph.json").write_text(
        json.dumps(
            {
                "dependencies": [str(REPO)],
                "graphs": {"mnemon_read": str(REPO / "graphs" / "read_graph.py") + ":graph"},
                "store": {
                    "path": "mnemon_langgraph.integrations.basestore.base_store_from_env",
                    "ttl": {"refresh_on_read": True, "sweep_interval_minutes": 1},
                },
            }
        )
    )
    port = _free_port()
    env.update(
        MNEMON_DB=str(db),
        MNEMON_NAMESPACE="ada",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        PYTHONUNBUFFERED="1",
    )
    log_path = tmp_path / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [exe, "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser",
             "--no-reload", "--allow-blocking"],
            cwd=app, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            _wait_until_up(f"http://127.0.0.1:{port}", proc, log_path)
            yield f"http://127.0.0.1:{port}", db
        finally:
            stop_group(proc)


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    import httpx

    deadline = time.monotonic() + BOOT_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            pytest.fail("langgraph dev exited:\n" + log.read_text()[-4000:])
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/ok", timeout=2.0).status_code == 200:
                return
        if time.monotonic() > deadline:
            pytest.fail("langgraph dev did not start:\n" + log.read_text()[-4000:])
        time.sleep(0.5)


def _poll(check: object, what: str, seconds: float = 30.0) -> None:
    """Wait until ``check()`` is true (the server works in its own time), at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {seconds} s")
        time.sleep(0.2)


def _rows(db: Path, sql: str) -> list[tuple]:  # type: ignore[type-arg]
    import sqlite3

    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


@pytest.mark.slow
def test_the_servers_store_api_is_the_memory(server: tuple[str, Path]) -> None:
    import httpx

    url, db = server
    # the store's own sweeper (langgraph.json's store.ttl) deleted the expired item at start
    swept = "SELECT ns, keys, actor FROM mnemon_kv_audit WHERE action = 'expire_items'"
    _poll(lambda: _rows(db, swept), "the server's TTL sweeper did not sweep")
    assert _rows(db, swept) == [('["memories","ada"]', '["stale"]', "ttl")]
    with httpx.Client(base_url=url, timeout=60) as client:
        brief = {"namespace": ["memories", "ada"], "key": "brief", "value": {"content": "x"}}
        put = client.put("/store/items", json={**brief, "ttl": 0.02})  # 1.2 seconds
        assert put.status_code in (200, 204), put.text
        ttl = _rows(db, "SELECT ttl_minutes FROM mnemon_kv_items WHERE key = 'brief'")
        assert ttl == [(0.02,)]
        item = {"namespace": "memories.ada", "key": "brief"}
        assert client.get("/store/items", params=item).json()["key"] == "brief"

        def brief_gone() -> bool:  # a read that refreshes (refresh_on_read) would keep it
            unrefreshed = {**item, "refresh_ttl": "false"}
            return client.get("/store/items", params=unrefreshed).json() is None

        _poll(brief_gone, "an item put with ttl=0.02 was still served")
        put = client.put(
            "/store/items",
            json={"namespace": ["memories", "ada"], "key": "diet",
                  "value": {"content": "Ada is vegetarian"}},
        )  # fmt: skip
        assert put.status_code in (200, 204), put.text
        got = client.get("/store/items", params={"namespace": "memories.ada", "key": "diet"})
        assert got.status_code == 200, got.text
        assert got.json()["value"] == {"content": "Ada is vegetarian"}
        found = client.post(
            "/store/items/search",
            json={"namespace_prefix": ["memories", "ada"], "query": "grey cat Pixel vegetarian"},
        )
        assert found.status_code == 200, found.text
        kinds = {i["value"].get("kind", "item") for i in found.json()["items"]}
        assert kinds == {"item", "record"}  # the journal's record is found through the server
        spaces = client.post("/store/namespaces", json={}).json()["namespaces"]
        assert ["memories", "ada"] in spaces
    stored = _rows(db, "SELECT key FROM mnemon_kv_items WHERE key != 'brief'")
    assert stored == [("diet",)]  # the server wrote into the journal's own file


def test_the_user_page_snippet_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    monkeypatch.chdir(tmp_path)
    page = (REPO / "docs" / "basestore.md").read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", page, re.S)
    exec(compile(code, "docs/basestore.md", "exec"), {"__name__": "docs_basestore"})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "{'content': 'Ada is vegetarian', 'since': 2019}"
    kinds = {line.split()[1] for line in lines[1:3]}
    assert kinds == {"item", "record"}  # the search found the item and the record
    assert lines[-1] == "Ada is vegetarian"  # the graph's node read the store
