"""The audit trail is append-only on both backends: no operation rewrites or deletes a row.

An erase appends its one row (count, actor, time, no text) in the erase's transaction; the
rows written before it — deletions of the erased namespace included — stay byte-identical,
also after erasing the same namespace again and erasing one that never existed. The
database itself refuses ``UPDATE`` and ``DELETE`` of audit rows (triggers), and a database
written before the triggers existed gets them on its next open.
"""

from __future__ import annotations

import itertools
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.store import MnemonStore, is_postgres_url
from mnemon_langgraph.types import Message

ADA = ("users", "ada")
BOB = ("users", "bob")
NOBODY = ("users", "nobody")
SECRET = "QzvAuditSecret4417"


@pytest.fixture(params=["embedded", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite path, or a fresh PostgreSQL database URL."""
    if request.param == "embedded":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(target: str) -> Iterator[MnemonStore]:
    with MnemonStore(target, fake_embeddings()) as s:
        yield s


def _raw_audit(target: str) -> list[Any]:
    """Every audit row, every column, as the database holds it."""
    if is_postgres_url(target):
        import psycopg

        with psycopg.connect(target) as conn:
            return conn.execute("SELECT t::text FROM mnemon_audit t ORDER BY id").fetchall()
    conn = sqlite3.connect(target)
    try:
        return conn.execute("SELECT * FROM audit ORDER BY id").fetchall()
    finally:
        conn.close()


def _bob_and_ada(store: MnemonStore) -> None:
    bob = [Message(f"{SECRET} bob says {w}", "Bob", id=f"b{i}") for i, w in enumerate("xyz")]
    store.ingest(BOB, bob, origin="chat", pack=False)
    ada = store.ingest(ADA, [Message("ada keeps this", "Ada", id="a0")], origin="chat")
    store.ingest(ADA, [Message("and this", "Ada", id="a1")], origin="chat")
    store.delete_records(ADA, [ada.record_ids[0]], reason="asked")
    # bob keeps 2 records; an "id" that names no message never reaches the trail
    store.delete_messages(BOB, ["b2", f"{SECRET} is no id"], actor="bob", reason="gdpr")


def test_erases_append_and_leave_every_earlier_row_byte_identical(
    store: MnemonStore, target: str
) -> None:
    _bob_and_ada(store)
    trail = [_raw_audit(target)]
    assert len(trail[0]) == 2
    assert store.erase_namespace(BOB, actor="ops") == 2
    trail.append(_raw_audit(target))
    assert store.erase_namespace(BOB, actor="ops") == 0  # again: nothing left to erase
    trail.append(_raw_audit(target))
    assert store.erase_namespace(NOBODY, actor="ops") == 0  # never existed
    trail.append(_raw_audit(target))
    for before, after in itertools.pairwise(trail):
        assert len(after) == len(before) + 1 and after[: len(before)] == before
    audit = store.audit_log()
    assert [(a.action, a.namespace, a.count) for a in audit] == [
        ("delete_records", ADA, 1),
        ("delete_messages", BOB, 1),
        ("erase_namespace", BOB, 2),
        ("erase_namespace", BOB, 0),
        ("erase_namespace", NOBODY, 0),
    ]
    assert audit[1].message_ids == ("b2",) and audit[1].reason == "gdpr"
    for erase in audit[2:]:
        assert (erase.actor, erase.record_ids, erase.message_ids, erase.reason) == (
            "ops",
            (),
            (),
            "",
        )
    assert SECRET.lower() not in repr(trail[-1]).lower()  # the trail holds no erased text
    assert store.count(BOB) == 0 and not store.holds_namespace(BOB)
    assert store.count(ADA) == 1 and [a.action for a in store.audit_log(ADA)] == ["delete_records"]


def _tamper(target: str, sql: str) -> None:
    if is_postgres_url(target):
        import psycopg

        with psycopg.connect(target) as conn:
            conn.execute(sql)
        return
    conn = sqlite3.connect(target)
    try:
        with conn:
            conn.execute(sql)
    finally:
        conn.close()


def _refused(target: str) -> tuple[type[BaseException], ...]:
    if is_postgres_url(target):
        import psycopg

        return (psycopg.Error,)
    return (sqlite3.Error,)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE {t} SET count = 99",
        "UPDATE {t} SET reason = 'rewritten' WHERE id = 1",
        "DELETE FROM {t}",
        "DELETE FROM {t} WHERE action = 'erase_namespace'",
    ],
)
def test_the_database_refuses_to_change_or_delete_audit_rows(
    store: MnemonStore, target: str, sql: str
) -> None:
    _bob_and_ada(store)
    store.erase_namespace(BOB, actor="ops")
    before = _raw_audit(target)
    table = "mnemon_audit" if is_postgres_url(target) else "audit"
    with pytest.raises(_refused(target), match="append-only"):
        _tamper(target, sql.format(t=table))
    assert _raw_audit(target) == before


def test_postgres_refuses_truncate_of_the_audit(postgres_url: str) -> None:
    with MnemonStore(postgres_url, fake_embeddings()) as store:
        _bob_and_ada(store)
    before = _raw_audit(postgres_url)
    import psycopg

    with pytest.raises(psycopg.Error, match="append-only"):
        _tamper(postgres_url, "TRUNCATE mnemon_audit")
    assert _raw_audit(postgres_url) == before and len(before) == 2


def test_a_database_without_the_triggers_gets_them_on_its_next_open(target: str) -> None:
    with MnemonStore(target, fake_embeddings()) as store:
        _bob_and_ada(store)
    if is_postgres_url(target):
        _tamper(target, "DROP TRIGGER mnemon_audit_append_only ON mnemon_audit")
    else:
        for name in ("audit_no_update", "audit_no_delete"):
            _tamper(target, f"DROP TRIGGER {name}")
    table = "mnemon_audit" if is_postgres_url(target) else "audit"
    _tamper(target, f"UPDATE {table} SET reason = reason")  # control: no trigger, accepted
    with MnemonStore(target, fake_embeddings()) as store:
        assert len(store.audit_log()) == 2
    before = _raw_audit(target)
    with pytest.raises(_refused(target), match="append-only"):
        _tamper(target, f"DELETE FROM {table}")
    assert _raw_audit(target) == before
