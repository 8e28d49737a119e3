"""``mnemon doctor --db postgresql://…``: schema, model identity, indexes, BM25 packs."""

from __future__ import annotations

import json
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from mnemon_langgraph.cli import main
from mnemon_langgraph.loaders import SAMPLE_PATH
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store.postgres._health import expected_indexes
from mnemon_langgraph.store.postgres._impact import PACK_MIN
from mnemon_langgraph.store.postgres._schema import SCHEMA_VERSION
from mnemon_langgraph.types import Message

NS = ["--namespace", "users", "--namespace", "ada"]


@pytest.fixture
def filled(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    """A store on ``postgres_url`` holding the sample conversation (fake embedder)."""
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    assert main(["ingest", str(SAMPLE_PATH), "--db", postgres_url, *NS, "--no-progress"]) == 0
    capsys.readouterr()
    return postgres_url


def _doctor(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list]:
    code = main(["doctor", "--db", url, "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_healthy_store_is_ok(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, reports = _doctor(filled, capsys, "--check")
    assert code == 0, reports
    database, ada = reports
    assert database["namespace"] == ["<database>"] and database["problems"] == []
    assert database["details"]["schema_version"] == SCHEMA_VERSION
    assert database["details"]["model_recorded"] == database["details"]["model_store"]
    indexes = database["details"]["indexes"]
    assert set(expected_indexes(384)) <= set(indexes)
    assert indexes["mnemon_vectors_hnsw"] == "hnsw"
    assert indexes["mnemon_records_terms"] == "gin"
    assert ada["namespace"] == ["users", "ada"] and ada["records"] > 0 and ada["problems"] == []
    assert main(["doctor", "--db", filled]) == 0
    text = capsys.readouterr().out
    assert f"<database>: schema version {SCHEMA_VERSION}" in text and "; ok" in text


@pytest.mark.parametrize("damage", ["drop", "invalid"])
def test_damaged_index_is_reported_and_repaired(
    damage: str, filled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with psycopg.connect(filled, autocommit=True) as conn:
        if damage == "drop":
            conn.execute("DROP INDEX mnemon_records_terms")
        else:  # what a failed CREATE INDEX CONCURRENTLY leaves behind
            conn.execute(
                "UPDATE pg_index SET indisvalid = false "
                "WHERE indexrelid = 'mnemon_records_terms'::regclass"
            )
    code, reports = _doctor(filled, capsys, "--check")
    assert code == 1
    problem = "is missing" if damage == "drop" else "is invalid (pg_index.indisvalid is false)"
    assert reports[0]["problems"] == [f"index mnemon_records_terms {problem}"]
    assert reports[0]["repaired"] == []
    code, reports = _doctor(filled, capsys)  # repair
    assert code == 0 and reports[0]["repaired"], reports
    with psycopg.connect(filled) as conn:
        row = conn.execute(
            "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = "
            "to_regclass('mnemon_records_terms')"
        ).fetchone()
    assert row == (True,)
    code, reports = _doctor(filled, capsys, "--check")
    assert code == 0 and reports[0]["problems"] == [], reports


def test_changed_model_identity_is_reported(
    filled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with psycopg.connect(filled, autocommit=True) as conn:
        conn.execute("UPDATE mnemon_meta SET value = 'other-model' WHERE key = 'embedding_model'")
    code, reports = _doctor(filled, capsys, "--check")
    assert code == 1
    assert any("'other-model'" in p for p in reports[0]["problems"]), reports
    code, reports = _doctor(filled, capsys)  # not repairable: exit 1, meta untouched
    assert code == 1 and reports[0]["unrepairable"]
    with psycopg.connect(filled) as conn:
        row = conn.execute("SELECT value FROM mnemon_meta WHERE key = 'embedding_model'")
        assert row.fetchone() == ("other-model",)


def test_due_packs_are_reported_and_refreshed(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    n = PACK_MIN + 10  # one term common enough to be packed
    with MnemonStore(postgres_url) as store:
        messages = [Message(f"note {i} about lyon", "user", "user", id=f"m{i}") for i in range(n)]
        store.ingest("ada", messages, origin="t", pack=False)
    code, reports = _doctor(postgres_url, capsys, "--check")
    assert code == 0 and reports[1]["details"]["packs_due"] == 0, reports
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # Packs lost (derived data): every packed term is due again by the store's own rule.
        assert conn.execute("DELETE FROM mnemon_packs").rowcount > 0
        conn.execute("UPDATE mnemon_terms SET packed = 0, upto = 0")
    code, reports = _doctor(postgres_url, capsys, "--check")
    due = reports[1]["details"]["packs_due"]
    assert code == 1 and due >= 1 and reports[1]["problems"], reports
    code, reports = _doctor(postgres_url, capsys)
    assert code == 0 and reports[1]["repaired"] == [f"refreshed {due} BM25 packs"], reports
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(DISTINCT term) FROM mnemon_packs").fetchone() == (due,)
    code, reports = _doctor(postgres_url, capsys, "--check")
    assert code == 0 and reports[1]["details"]["packs_due"] == 0, reports


def test_output_never_shows_the_password(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    secret = "d0ct0rpw"
    parts = urlsplit(filled)
    user = parts.username or "postgres"
    host = parts.netloc.rpartition("@")[2]
    url = urlunsplit(parts._replace(netloc=f"{user}:{secret}@{host}"))
    with psycopg.connect(url) as conn:  # the test server accepts the URL with its password
        conn.execute("SELECT 1")
    for extra in ([], ["--json"], ["--check"], ["--namespace", "nobody"]):
        assert main(["doctor", "--db", url, *extra]) == 0
        out, err = capsys.readouterr()
        assert out.strip() and secret not in out + err


def test_schema_version_due_and_newer(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    def set_version(version: int) -> None:
        with psycopg.connect(filled, autocommit=True) as conn:
            conn.execute(
                "UPDATE mnemon_meta SET value = %s WHERE key = 'schema_version'", (str(version),)
            )

    set_version(SCHEMA_VERSION - 1)
    code, reports = _doctor(filled, capsys, "--check")
    assert code == 1
    assert reports[0]["problems"] == [
        f"schema version {SCHEMA_VERSION - 1}: migration to {SCHEMA_VERSION} due"
    ]
    code, reports = _doctor(filled, capsys)
    assert code == 0 and reports[0]["repaired"] == [f"migrated to schema version {SCHEMA_VERSION}"]
    assert _doctor(filled, capsys, "--check")[0] == 0

    set_version(SCHEMA_VERSION + 1)
    code, reports = _doctor(filled, capsys)
    assert code == 1 and reports[0]["unrepairable"] and len(reports) == 1, reports
