"""No ``mnemon`` command prints, logs or JSON-outputs a connection string's password.

Every command that takes ``--db`` is run in-process against a PostgreSQL URL on loopback
port 1 (connection refused at once); the password must appear nowhere, and the command must
fail with something printed (so an empty output cannot pass). The connection pool retries a
refused connection until its open timeout; the tests cap that timeout (the failure and its
messages are the same, only the number of retries drops).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from mnemon_langgraph.cli import main
from mnemon_langgraph.cli._common import redact_db
from mnemon_langgraph.store.postgres import redact

SECRET = "s3cretpw"
URL = f"postgresql://postgres:{SECRET}@127.0.0.1:1/nodb"


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        (URL, "postgresql://postgres:***@127.0.0.1:1/nodb"),
        (
            "postgresql:///db?password=x&sslmode=disable",
            "postgresql:///db?password=***&sslmode=disable",
        ),
        ("postgres://u@h/db?sslpassword=y", "postgres://u@h/db?sslpassword=***"),
        ("postgresql://u@h:5432/db?sslmode=require", "postgresql://u@h:5432/db?sslmode=require"),
        ("/tmp/a:b@c/memory.db", "/tmp/a:b@c/memory.db"),
        ("memory.db", "memory.db"),
    ],
)
def test_redact(given: str, shown: str) -> None:
    assert redact(given) == shown
    assert redact_db(given) == shown
    assert redact_db(Path("memory.db")) == "memory.db"


def _locomo_file(tmp_path: Path) -> Path:
    """A one-conversation LoCoMo-format file (so ``eval`` gets as far as opening the store)."""
    turns = [{"speaker": "Ann", "dia_id": "D1:1", "text": "I live in Leeds."}]
    conversation = {"speaker_a": "Ann", "speaker_b": "Bob", "session_1": turns}
    conversation["session_1_date_time"] = "1:56 pm on 8 May, 2023"
    qa = [{"question": "Where does Ann live?", "answer": "Leeds", "evidence": ["D1:1"]}]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": conversation, "qa": qa}]))
    return path


def _argvs(tmp_path: Path) -> list[list[str]]:
    convo = tmp_path / "c.jsonl"
    convo.write_text('{"id": "m1", "role": "user", "content": "I live in Leeds."}\n')
    locomo, out = str(_locomo_file(tmp_path)), str(tmp_path / "out")
    return [
        ["doctor", "--db", URL],
        ["doctor", "--db", URL, "--json", "--check"],
        ["erase", "--db", URL, "--namespace", "ada", "--yes"],
        ["erase", "--db", URL, "--namespace", "ada", "--yes", "--json"],
        ["retention", "--db", URL, "--namespace", "ada", "--older-than", "30d"],
        ["retention", "--db", URL, "--namespace", "ada", "--older-than", "30d", "--json"],
        ["stats", "--db", URL],
        ["stats", "--db", URL, "--json"],
        ["ingest", str(convo), "--db", URL, "--namespace", "ada", "--no-progress"],
        ["search", "where", "--db", URL, "--namespace", "ada"],
        ["view", "where do I live?", "--db", URL, "--namespace", "ada"],
        ["consolidate", "--db", URL, "--namespace", "ada", "--model", "openai:gpt-4.1-mini"],
        ["eval", "locomo", locomo, "--out", out, "--store", URL, "--embeddings", "fake"],
        ["eval", "locomo", locomo, "--out", out, "--store", URL, "--no-progress", "--no-plots"],
        ["bench", "backend", "--db", URL, "--records", "10"],
        ["bench", "backend", "--db", URL, "--records", "10", "--json"],
    ]


POOL_OPEN_TIMEOUT_S = 1.0


def _cap_pool_open_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``AsyncConnectionPool.open(wait=True)`` give up after a second, not thirty.

    The store opens its pool with psycopg_pool's own ``open(wait=True, timeout=...)``, which
    retries a refused connection until the timeout; capping it there (not in the store)
    keeps the store's code path, its error and every log line of the attempt unchanged.
    """
    pool_mod = pytest.importorskip("psycopg_pool")
    real_open = pool_mod.AsyncConnectionPool.open

    async def open_soon(self: Any, wait: bool = False, timeout: float = 30.0) -> None:
        await real_open(self, wait=wait, timeout=min(timeout, POOL_OPEN_TIMEOUT_S))

    monkeypatch.setattr(pool_mod.AsyncConnectionPool, "open", open_soon)


@pytest.mark.parametrize("index", range(16))
def test_no_command_shows_the_password(
    index: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    pytest.importorskip("psycopg")
    _cap_pool_open_timeout(monkeypatch)
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    import mnemon_langgraph.cli._consolidate as consolidate

    monkeypatch.setattr(consolidate, "_init_model", lambda spec: object())  # no API key needed
    argv = _argvs(tmp_path)[index]
    with caplog.at_level(logging.DEBUG):
        code = main(argv)
    out, err = capsys.readouterr()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert code != 0, (argv, out, err)
    assert (out + err).strip(), argv
    for text in (out, err, logged):
        assert SECRET not in text, (argv, text)
    if argv[0] in ("doctor", "eval", "bench"):  # it reached the database, named redacted
        assert err.startswith("mnemon: error: ") and redact(URL) in err, (argv, err)
        assert "no journal" not in err


@pytest.mark.parametrize("as_json", [False, True])
def test_erase_result_shows_no_password(
    as_json: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A successful erase names the database without its password (text and ``--json``)."""
    import mnemon_langgraph.cli._erase as erase

    monkeypatch.setattr(erase, "_namespace_exists", lambda db, ns: True)
    monkeypatch.setattr(erase, "erase_namespace_files", lambda db, ns, actor: 3)
    argv = ["erase", "--db", URL, "--namespace", "ada", "--yes"] + (["--json"] if as_json else [])
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    if as_json:
        assert json.loads(out)["db"] == redact(URL)
    else:
        assert "erased 3 records" in out and redact(URL) in out


def test_error_handler_redacts_the_raw_db(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An exception whose message holds the raw ``--db`` URL is printed redacted."""
    import mnemon_langgraph.cli._stats as stats
    from mnemon_langgraph.errors import ConfigurationError

    def boom(args: object) -> int:
        raise ConfigurationError(f"bad database {URL}")

    def crash(args: object) -> int:
        raise RuntimeError(f"driver said: {URL}?sslpassword=other")

    for func, code in ((boom, 2), (crash, 1)):
        monkeypatch.setattr(stats, "run", func)
        assert main(["stats", "--db", URL]) == code
        err = capsys.readouterr().err
        assert err.startswith("mnemon: error: ") and redact(URL) in err
        assert SECRET not in err and "other" not in err


def test_store_repr_shows_no_password(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``repr`` and ``str`` of a store opened on a URL holding a password hide it."""
    from urllib.parse import urlsplit, urlunsplit

    from mnemon_langgraph.store import MnemonStore, PostgresStore

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    parts = urlsplit(postgres_url)
    host = parts.netloc.rpartition("@")[2]
    url = urlunsplit(parts._replace(netloc=f"{parts.username or 'postgres'}:{SECRET}@{host}"))
    with PostgresStore.from_conn_string(url) as store:  # the test server accepts it
        assert store.url == url  # the store holds it; its representations must not show it
        shown = [repr(store), str(store), repr(store.engine), f"{store!r}"]
    with MnemonStore(url) as other:
        shown += [repr(other), str(other)]
    for text in shown:
        assert text and SECRET not in text, text
